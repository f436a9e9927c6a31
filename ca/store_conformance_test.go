package ca

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"minica/ca/store"
	"minica/revoke"
)

// storeHarness is an engine under the conformance suite: a fresh, empty
// store of the CA cert, whose key is signer, with its lock not held.
type storeHarness struct {
	db     database
	cert   *x509.Certificate
	signer crypto.Signer
	// open opens a second handle on the same store, as another process
	// of the CA would.
	open func(t *testing.T) database
	// loseLock ends the lock that db holds as its holder would not know
	// (the session of a PostgreSQL lock ended); nil for an engine whose
	// lock lasts as long as its holder.
	loseLock func(t *testing.T)
}

// storeCases is the conformance suite of the store engines: every engine
// (fileStore, pgStore, and any third one) must pass every case.
var storeCases = []struct {
	name string
	run  func(t *testing.T, h *storeHarness)
}{
	{"reserve, complete and read back", testStoreReserveComplete},
	{"a taken serial", testStoreReserveTaken},
	{"a group reserved and completed", testStoreGroup},
	{"void", testStoreVoid},
	{"lookup by name", testStoreByName},
	{"records in serial order", testStoreRecords},
	{"revoke and the revocation log", testStoreRevoke},
	{"CRL number", testStoreCRLNumber},
	{"current CRL", testStoreCRL},
	{"enrollments", testStoreEnrollments},
	{"the lock", testStoreLock},
	{"the lock lost", testStoreLockLost},
	{"copy into an empty store", testStoreLoad},
}

// runStoreConformance runs every case of storeCases on a fresh store from
// newStore.
func runStoreConformance(t *testing.T, newStore func(t *testing.T) *storeHarness) {
	for _, tc := range storeCases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
}

var storeT0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// pending returns the pending record of serial n of name.
func storePending(n int, name string) *Record {
	return &Record{Serial: fmt.Sprintf("%032x", n), Name: name, Profile: Client, Status: StatusPending,
		HasKey: true, IssuedAt: storeT0.Add(time.Duration(n) * time.Second)}
}

// completed is r as issuance completes it.
func storeCompleted(r *Record) *Record {
	done := *r
	done.Status = StatusValid
	done.Subject = "CN=" + r.Name
	done.SANs = []string{"email:" + r.Name + "@example.com"}
	done.NotBefore, done.NotAfter = r.IssuedAt.Add(-5*time.Minute), r.IssuedAt.AddDate(1, 0, 0)
	done.Fingerprint = strings.Repeat(r.Serial[30:], 32)
	return &done
}

func mustRecord(t *testing.T, db database, serial string) *Record {
	t.Helper()
	r, err := db.Record(serial)
	if err != nil {
		t.Fatalf("Record(%s): %v", serial, err)
	}
	return r
}

func sameRecord(t *testing.T, got, want *Record) {
	t.Helper()
	if !bytes.Equal(store.EncodeRecord(got), store.EncodeRecord(want)) {
		t.Errorf("record = %s; want %s", store.EncodeRecord(got), store.EncodeRecord(want))
	}
}

// issue reserves and completes serial n of name.
func storeIssue(t *testing.T, db database, n int, name string) *Record {
	t.Helper()
	r := storePending(n, name)
	res, err := db.Reserve(r)
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	done := storeCompleted(r)
	if err := db.Complete(res, done); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	return done
}

func testStoreReserveComplete(t *testing.T, h *storeHarness) {
	r := storePending(1, "alice")
	res, err := h.db.Reserve(r)
	if err != nil {
		t.Fatal(err)
	}
	// The reservation is visible at once, to every handle.
	sameRecord(t, mustRecord(t, h.open(t), r.Serial), r)
	done := storeCompleted(r)
	if err := h.db.Complete(res, done); err != nil {
		t.Fatal(err)
	}
	got := mustRecord(t, h.db, r.Serial)
	sameRecord(t, got, done)
	if got.Fingerprint != done.Fingerprint {
		t.Errorf("Fingerprint = %q; want %q", got.Fingerprint, done.Fingerprint)
	}
	if _, err := h.db.Record(fmt.Sprintf("%032x", 99)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Record(unknown) error = %v; want ErrNotFound", err)
	}
	// A renewal link is recorded by UpdateRecord.
	done.RenewedBy = fmt.Sprintf("%032x", 2)
	if err := h.db.UpdateRecord(done); err != nil {
		t.Fatal(err)
	}
	sameRecord(t, mustRecord(t, h.db, r.Serial), done)
}

func testStoreReserveTaken(t *testing.T, h *storeHarness) {
	first := storeIssue(t, h.db, 1, "alice")
	again := storePending(1, "bob")
	if _, err := h.db.Reserve(again); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Reserve(taken serial) error = %v; want fs.ErrExist", err)
	}
	sameRecord(t, mustRecord(t, h.db, first.Serial), first)
	// In a group, a taken serial fails the whole group.
	group := []*Record{storePending(2, "carol"), storePending(1, "dave")}
	if _, err := h.db.ReserveGroup(group); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("ReserveGroup(with a taken serial) error = %v; want fs.ErrExist", err)
	}
	if r, err := h.db.Record(group[0].Serial); err == nil && r.Status == StatusPending {
		t.Errorf("the group's other serial is pending after a failed ReserveGroup: %s", store.EncodeRecord(r))
	}
}

func testStoreGroup(t *testing.T, h *storeHarness) {
	var group, done []*Record
	for i := range 5 {
		group = append(group, storePending(10+i, fmt.Sprintf("n%d", i)))
	}
	res, err := h.db.ReserveGroup(group)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(group) {
		t.Fatalf("%d reservations for %d records", len(res), len(group))
	}
	for _, r := range group {
		done = append(done, storeCompleted(r))
	}
	if err := h.db.CompleteGroup(res, done); err != nil {
		t.Fatal(err)
	}
	for _, r := range done {
		sameRecord(t, mustRecord(t, h.db, r.Serial), r)
	}
}

func testStoreVoid(t *testing.T, h *storeHarness) {
	r := storePending(1, "alice")
	res, err := h.db.Reserve(r)
	if err != nil {
		t.Fatal(err)
	}
	res.Release()
	void := *r
	void.Status = StatusVoid
	if err := h.db.PutRecord(&void); err != nil {
		t.Fatal(err)
	}
	sameRecord(t, mustRecord(t, h.db, r.Serial), &void)
	recs, err := h.db.RecordsByName("alice")
	if err != nil || len(recs) != 0 {
		t.Errorf("RecordsByName(alice) = %d records, %v; want none: a void serial is no certificate", len(recs), err)
	}
}

func testStoreByName(t *testing.T, h *storeHarness) {
	// Issued out of serial order: by name they come oldest first.
	b := storeIssue(t, h.db, 9, "alice")
	b.IssuedAt = storeT0.Add(time.Hour)
	if err := h.db.PutRecord(b); err != nil {
		t.Fatal(err)
	}
	a := storeIssue(t, h.db, 20, "alice")
	storeIssue(t, h.db, 5, "bob")
	pending := storePending(30, "alice")
	if _, err := h.db.Reserve(pending); err != nil {
		t.Fatal(err)
	}
	recs, err := h.db.RecordsByName("alice")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Serial)
	}
	if want := []string{a.Serial, pending.Serial, b.Serial}; !slices.Equal(got, want) {
		t.Errorf("RecordsByName(alice) = %v; want %v (oldest first, pending included)", got, want)
	}
	if recs, err := h.db.RecordsByName("nobody"); err != nil || len(recs) != 0 {
		t.Errorf("RecordsByName(nobody) = %v, %v; want none", recs, err)
	}
}

func testStoreRecords(t *testing.T, h *storeHarness) {
	var want []string
	for _, n := range []int{0x300, 7, 0x1ff, 0x42} {
		want = append(want, storeIssue(t, h.db, n, fmt.Sprintf("r%d", n)).Serial)
	}
	slices.Sort(want)
	var got []string
	for r, err := range h.db.Records() {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Serial)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Records() = %v; want %v", got, want)
	}
	parts, err := h.db.RecordParts()
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, part := range parts {
		for r, err := range part {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r.Serial)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("RecordParts() = %v; want %v", got, want)
	}
}

func testStoreRevoke(t *testing.T, h *storeHarness) {
	stamp0, err := h.db.RevocationStamp()
	if err != nil {
		t.Fatal(err)
	}
	a, b := storeIssue(t, h.db, 1, "alice"), storeIssue(t, h.db, 2, "bob")
	for _, r := range []*Record{a, b} {
		r.Status, r.RevokedAt, r.Reason = StatusRevoked, storeT0.Add(time.Minute), "keyCompromise"
	}
	if err := h.db.RevokeRecords([]*Record{a, b}); err != nil {
		t.Fatal(err)
	}
	sameRecord(t, mustRecord(t, h.db, a.Serial), a)
	stamp1, err := h.db.RevocationStamp()
	if err != nil || stamp1 == stamp0 {
		t.Errorf("RevocationStamp() after a revocation = %v, %v; want other than %v", stamp1, err, stamp0)
	}
	// A hold lifted: the latest event of a serial wins.
	if err := h.db.AppendRevocations(revEvent{Serial: b.Serial, Lifted: true}); err != nil {
		t.Fatal(err)
	}
	// A revocation without a record (restored from a CRL).
	lone := revEvent{Serial: fmt.Sprintf("%032x", 3), RevokedAt: storeT0, Reason: "superseded", NotAfter: storeT0.AddDate(1, 0, 0)}
	if err := h.db.AppendRevocations(lone); err != nil {
		t.Fatal(err)
	}
	events, err := h.db.LatestRevocations()
	if err != nil {
		t.Fatal(err)
	}
	var got []revEvent
	for i := range events {
		got = append(got, events[i].RevEvent())
	}
	want := []revEvent{eventOf(a), {Serial: b.Serial, Lifted: true}, lone}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("LatestRevocations() = %+v; want %+v", got, want)
	}
	if stamp2, _ := h.db.RevocationStamp(); stamp2 == stamp1 {
		t.Errorf("RevocationStamp() did not change after an append")
	}
}

// storeCRL signs a CRL of h numbered n.
func storeCRL(t *testing.T, h *storeHarness, n int64) []byte {
	t.Helper()
	der, err := revoke.Build(revoke.Params{Issuer: h.cert, Signer: h.signer, Number: big.NewInt(n),
		ThisUpdate: storeT0, NextUpdate: storeT0.Add(24 * time.Hour)}, func(func(revoke.Entry) bool) {})
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func testStoreCRLNumber(t *testing.T, h *storeHarness) {
	last, err := h.db.LastCRLNumber()
	if err != nil {
		t.Fatal(err)
	}
	// From the clock in milliseconds, when that is higher.
	n1, err := h.db.NextCRLNumber(storeT0)
	if err != nil {
		t.Fatal(err)
	}
	if want := big.NewInt(storeT0.UnixMilli()); last.Cmp(want) < 0 && n1.Cmp(want) != 0 {
		t.Errorf("NextCRLNumber(t0) = %s; want %s", n1, want)
	}
	// Strictly increasing, when the clock goes back, and across handles.
	n2, err := h.open(t).NextCRLNumber(storeT0.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if want := new(big.Int).Add(n1, big.NewInt(1)); n2.Cmp(want) != 0 {
		t.Errorf("NextCRLNumber(clock back) = %s; want %s", n2, want)
	}
	if got, err := h.db.LastCRLNumber(); err != nil || got.Cmp(n2) != 0 {
		t.Errorf("LastCRLNumber() = %v, %v; want %s", got, err, n2)
	}
	// A saved CRL's number counts too.
	high := new(big.Int).Add(n2, big.NewInt(1000))
	if saved, err := h.db.SaveCRL(high, storeCRL(t, h, high.Int64())); err != nil || !saved {
		t.Fatalf("SaveCRL(%s) = %v, %v; want saved", high, saved, err)
	}
	if _, err := h.db.RaiseCRLNumber(high); err != nil {
		t.Fatal(err)
	}
	n3, err := h.db.NextCRLNumber(storeT0)
	if err != nil {
		t.Fatal(err)
	}
	if n3.Cmp(high) <= 0 {
		t.Errorf("NextCRLNumber() = %s after CRL %s was saved; want higher", n3, high)
	}
}

func testStoreCRL(t *testing.T, h *storeHarness) {
	if _, err := h.db.CRL(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("CRL() of a new store error = %v; want fs.ErrNotExist", err)
	}
	if _, err := h.db.CRLStamp(); !errors.Is(err, ErrNoCRL) {
		t.Errorf("CRLStamp() of a new store error = %v; want ErrNoCRL", err)
	}
	if _, err := h.db.ReadCRL(); !errors.Is(err, ErrNoCRL) {
		t.Errorf("ReadCRL() of a new store error = %v; want ErrNoCRL", err)
	}
	n, err := h.db.NextCRLNumber(storeT0)
	if err != nil {
		t.Fatal(err)
	}
	der := storeCRL(t, h, n.Int64())
	if saved, err := h.db.SaveCRL(n, der); err != nil || !saved {
		t.Fatalf("SaveCRL(%s) = %v, %v; want saved", n, saved, err)
	}
	if got, err := h.db.CRL(); err != nil || !bytes.Equal(got, der) {
		t.Errorf("CRL() = %d bytes, %v; want the CRL saved", len(got), err)
	}
	stamp, err := h.db.CRLStamp()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := h.db.ReadCRL()
	if err != nil || !bytes.Equal(pub.DER, der) || pub.Stamp != stamp || pub.CRL.Number().Cmp(n) != 0 {
		t.Fatalf("ReadCRL() = %+v, %v; want CRL %s with stamp %v", pub, err, n, stamp)
	}
	// A lower number never replaces the current CRL.
	lower := new(big.Int).Sub(n, big.NewInt(1))
	if saved, err := h.db.SaveCRL(lower, storeCRL(t, h, lower.Int64())); err != nil || saved {
		t.Errorf("SaveCRL(lower number) = %v, %v; want not saved", saved, err)
	}
	if got, _ := h.db.CRL(); !bytes.Equal(got, der) {
		t.Errorf("a lower number replaced the current CRL")
	}
	// A higher one does, with a new stamp; the check of the published
	// copy finds nothing to repair.
	n2, err := h.db.NextCRLNumber(storeT0)
	if err != nil {
		t.Fatal(err)
	}
	der2 := storeCRL(t, h, n2.Int64())
	if saved, err := h.db.SaveCRL(n2, der2); err != nil || !saved {
		t.Fatalf("SaveCRL(%s) = %v, %v; want saved", n2, saved, err)
	}
	if s2, err := h.db.CRLStamp(); err != nil || s2 == stamp {
		t.Errorf("CRLStamp() = %v, %v after a new CRL; want other than %v", s2, err, stamp)
	}
	var notes []string
	note := func(s string) { notes = append(notes, s) }
	crl, err := h.db.CheckCRL(note, note)
	if err != nil || crl == nil || crl.Number().Cmp(n2) != 0 || len(notes) != 0 {
		t.Errorf("CheckCRL() = %v, %v, notes %q; want CRL %s and nothing to say", crl, err, notes, n2)
	}
}

func testStoreEnrollments(t *testing.T, h *storeHarness) {
	const a1, a2, b1 = "0000000000a1", "0000000000a2", "0000000000b1"
	for _, e := range []storedEnrollment{{ID: a1, Name: "alice"}, {ID: b1, Name: "bob"}, {ID: a2, Name: "alice"}} {
		e.Data = []byte(`{"id":"` + e.ID + `"}` + "\n")
		if err := h.db.CreateEnrollment(e); err != nil {
			t.Fatalf("CreateEnrollment(%s): %v", e.ID, err)
		}
	}
	if err := h.db.CreateEnrollment(storedEnrollment{ID: a1, Name: "carol", Data: []byte("{}\n")}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateEnrollment(taken ID) error = %v; want fs.ErrExist", err)
	}
	if got, err := h.db.EnrollmentByName("alice"); err != nil || got.ID != a2 {
		t.Errorf("EnrollmentByName(alice) = %+v, %v; want %s, the latest", got, err, a2)
	}
	if _, err := h.db.EnrollmentByName("dave"); !errors.Is(err, ErrEnrollmentUnknown) {
		t.Errorf("EnrollmentByName(dave) error = %v; want ErrEnrollmentUnknown", err)
	}
	used := storedEnrollment{ID: a1, Name: "alice", Data: []byte(`{"id":"` + a1 + `","status":"used"}` + "\n")}
	if err := h.db.PutEnrollment(used); err != nil {
		t.Fatal(err)
	}
	if got, err := h.db.Enrollment(a1); err != nil || !bytes.Equal(got.Data, used.Data) || got.ID != a1 || got.Where == "" {
		t.Errorf("Enrollment(%s) = %+v, %v; want %s", a1, got, err, used.Data)
	}
	if _, err := h.db.Enrollment("0000000000ff"); !errors.Is(err, ErrEnrollmentUnknown) {
		t.Errorf("Enrollment(unknown) error = %v; want ErrEnrollmentUnknown", err)
	}
	var ids []string
	for e, err := range h.db.Enrollments() {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	if want := []string{a1, a2, b1}; !slices.Equal(ids, want) {
		t.Errorf("Enrollments() = %v; want %v (ID order)", ids, want)
	}
}

func testStoreLock(t *testing.T, h *storeHarness) {
	unlock, err := h.db.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	other := h.open(t)
	start := time.Now()
	_, err = other.Lock(100 * time.Millisecond)
	var le *LockError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock() error = %v; want a *LockError matching ErrLocked", err)
	}
	if time.Since(start) < 100*time.Millisecond {
		t.Errorf("second Lock() gave up after %v; want it to wait its timeout", time.Since(start))
	}
	// Writes of the holder go on.
	storeIssue(t, h.db, 1, "alice")
	unlock()
	unlock2, err := other.Lock(time.Second)
	if err != nil {
		t.Fatalf("Lock() after the holder let go: %v", err)
	}
	unlock2()
}

func testStoreLockLost(t *testing.T, h *storeHarness) {
	if h.loseLock == nil {
		t.Skip("the engine's lock lasts as long as its holder")
	}
	unlock, err := h.db.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	storeIssue(t, h.db, 1, "alice")
	h.loseLock(t)
	r := storePending(2, "bob")
	if _, err := h.db.Reserve(r); !errors.Is(err, ErrStoreLockLost) {
		t.Fatalf("Reserve() after the lock was lost: error = %v; want ErrStoreLockLost", err)
	}
	if err := h.db.AppendRevocations(revEvent{Serial: fmt.Sprintf("%032x", 1), Lifted: true}); !errors.Is(err, ErrStoreLockLost) {
		t.Errorf("AppendRevocations() after the lock was lost: error = %v; want ErrStoreLockLost", err)
	}
	// Another process takes the lock.
	unlock2, err := h.open(t).Lock(5 * time.Second)
	if err != nil {
		t.Fatalf("Lock() by another process after the loss: %v", err)
	}
	unlock2()
}

func testStoreLoad(t *testing.T, h *storeHarness) {
	src := storeHarnessFile(t) // any engine: the copy goes through the interface
	a := storeIssue(t, src.db, 1, "alice")
	storeIssue(t, src.db, 2, "bob")
	a.Status, a.RevokedAt, a.Reason = StatusRevoked, storeT0, "superseded"
	if err := src.db.RevokeRecords([]*Record{a}); err != nil {
		t.Fatal(err)
	}
	if err := src.db.CreateEnrollment(storedEnrollment{ID: "0000000000a1", Name: "alice",
		Data: encodeEnrollment(&Enrollment{Version: 1, ID: "0000000000a1", Name: "alice", CreatedAt: storeT0})}); err != nil {
		t.Fatal(err)
	}
	n, err := src.db.NextCRLNumber(storeT0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.db.SaveCRL(n, storeCRL(t, src, n.Int64())); err != nil {
		t.Fatal(err)
	}
	res, err := copyStore(src.db, h.db, src.cert)
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 2 || res.Revocations != 1 || res.Enrollments != 1 || res.CRLNumber.Cmp(n) != 0 {
		t.Errorf("copyStore() = %+v; want 2 records, 1 revocation, 1 enrollment, CRL %s", res, n)
	}
	sameRecord(t, mustRecord(t, h.db, a.Serial), a)
	if events, err := h.db.LatestRevocations(); err != nil || len(events) != 1 {
		t.Errorf("LatestRevocations() of the copy = %d events, %v; want 1", len(events), err)
	}
	if _, err := h.db.EnrollmentByName("alice"); err != nil {
		t.Errorf("EnrollmentByName(alice) of the copy: %v", err)
	}
	if last, err := h.db.LastCRLNumber(); err != nil || last.Cmp(n) < 0 {
		t.Errorf("LastCRLNumber() of the copy = %v, %v; want at least %s", last, err, n)
	}
	// A store that holds records takes no copy.
	if _, err := copyStore(src.db, h.db, src.cert); !errors.Is(err, ErrStoreNotEmpty) {
		t.Errorf("a second copy error = %v; want ErrStoreNotEmpty", err)
	}
}

// storeHarnessFile returns the file store of a new CA directory.
func storeHarnessFile(t *testing.T) *storeHarness {
	c, signer := newTestCA(t, InitOptions{})
	removeFirstCRL(t, c)
	return &storeHarness{db: c.db, cert: c.Cert, signer: signer, open: reopener(c)}
}

// reopener returns a function that opens c's store again, as another
// process of the CA would.
func reopener(c *CA) func(t *testing.T) database {
	return func(t *testing.T) database {
		o, err := openTest(c.dir.Path())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		return o.db
	}
}

// removeFirstCRL takes away the CRL Init published, so that the store
// starts without one.
func removeFirstCRL(t *testing.T, c *CA) {
	t.Helper()
	for _, f := range []string{CRLPEMFile, CRLDERFile, crlNumberFile} {
		if err := c.dir.Root().Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
}

func TestFileStoreConformance(t *testing.T) { runStoreConformance(t, storeHarnessFile) }
