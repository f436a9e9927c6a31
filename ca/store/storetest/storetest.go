package storetest

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
	"minica/internal/cadir"
	"minica/revoke"
)

// Harness is an engine under the conformance suite: a fresh, empty
// Store of the CA Cert, whose key is Signer, with its lock not held.
type Harness struct {
	Store  store.Store
	Cert   *x509.Certificate
	Signer crypto.Signer
	// Dir is the CA directory, where the store writes the published
	// copies of the current CRL and delta CRL.
	Dir *cadir.Dir
	// Open opens a second handle on the same store, as another process
	// of the CA would.
	Open func(t *testing.T) store.Store
	// LoseLock ends the lock that Store holds as its holder would not
	// know (the session of a PostgreSQL lock ended); nil for an engine
	// whose lock lasts as long as its holder.
	LoseLock func(t *testing.T)
}

// cases is the conformance suite: every engine passes every case.
var cases = []struct {
	name string
	run  func(t *testing.T, h *Harness, newStore func(t *testing.T) *Harness)
}{
	{"reserve, complete and read back", only(testStoreReserveComplete)},
	{"a taken serial", only(testStoreReserveTaken)},
	{"a group reserved and completed", only(testStoreGroup)},
	{"void", only(testStoreVoid)},
	{"lookup by name", only(testStoreByName)},
	{"records in serial order", only(testStoreRecords)},
	{"revoke and the revocation log", only(testStoreRevoke)},
	{"CRL number", only(testStoreCRLNumber)},
	{"current CRL", only(testStoreCRL)},
	{"current delta CRL", only(testStoreDeltaCRL)},
	{"the delta CRL's published copy repaired", only(testStoreDeltaCRLCopyRepaired)},
	{"a delta CRL notified", only(testStoreDeltaCRLNotified)},
	{"enrollments", only(testStoreEnrollments)},
	{"the lock", only(testStoreLock)},
	{"the lock lost", only(testStoreLockLost)},
	{"ACME objects: create, read, replace, delete", only(testStoreObjects)},
	{"ACME objects by kind in ID order", only(testStoreObjectsOrder)},
	{"volatile ACME objects", only(testStoreVolatileObjects)},
	{"ACME object kinds and IDs refused", only(testStoreObjectNames)},
	{"ACME nonces used once", only(testStoreNonces)},
	{"an ACME nonce used concurrently", only(testStoreNonceRace)},
	{"ACME objects and nonces across handles", only(testStoreACMEHandles)},
	{"a copy loaded into an empty store", testStoreLoad},
	{"closed twice", only(testStoreCloseTwice)},
}

// only adapts a case that needs no second store.
func only(f func(t *testing.T, h *Harness)) func(t *testing.T, h *Harness, _ func(t *testing.T) *Harness) {
	return func(t *testing.T, h *Harness, _ func(t *testing.T) *Harness) { f(t, h) }
}

// Run runs every case of the suite, each on a fresh store from newStore.
func Run(t *testing.T, newStore func(t *testing.T) *Harness) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t), newStore) })
	}
}

var storeT0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// pending returns the pending record of serial n of name.
func storePending(n int, name string) *store.Record {
	return &store.Record{Serial: fmt.Sprintf("%032x", n), Name: name, Profile: "client", Status: store.StatusPending,
		HasKey: true, IssuedAt: storeT0.Add(time.Duration(n) * time.Second)}
}

// completed is r as issuance completes it.
func storeCompleted(r *store.Record) *store.Record {
	done := *r
	done.Status = store.StatusValid
	done.Subject = "CN=" + r.Name
	done.SANs = []string{"email:" + r.Name + "@example.com"}
	done.NotBefore, done.NotAfter = r.IssuedAt.Add(-5*time.Minute), r.IssuedAt.AddDate(1, 0, 0)
	done.Fingerprint = strings.Repeat(r.Serial[30:], 32)
	return &done
}

func mustRecord(t *testing.T, db store.Store, serial string) *store.Record {
	t.Helper()
	r, err := db.Record(serial)
	if err != nil {
		t.Fatalf("Record(%s): %v", serial, err)
	}
	return r
}

func sameRecord(t *testing.T, got, want *store.Record) {
	t.Helper()
	if !bytes.Equal(store.EncodeRecord(got), store.EncodeRecord(want)) {
		t.Errorf("record = %s; want %s", store.EncodeRecord(got), store.EncodeRecord(want))
	}
}

// Issue reserves and completes serial n of name in db, as issuance does,
// and returns the completed record.
func Issue(t *testing.T, db store.Store, n int, name string) *store.Record {
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

func testStoreReserveComplete(t *testing.T, h *Harness) {
	r := storePending(1, "alice")
	r.Device = "Alice's laptop <ünë>" // a sign-in device: free text, escaped in JSON
	res, err := h.Store.Reserve(r)
	if err != nil {
		t.Fatal(err)
	}
	// The reservation is visible at once, to every handle.
	sameRecord(t, mustRecord(t, h.Open(t), r.Serial), r)
	done := storeCompleted(r)
	if err := h.Store.Complete(res, done); err != nil {
		t.Fatal(err)
	}
	got := mustRecord(t, h.Store, r.Serial)
	sameRecord(t, got, done)
	if got.Fingerprint != done.Fingerprint {
		t.Errorf("Fingerprint = %q; want %q", got.Fingerprint, done.Fingerprint)
	}
	if got.Device != r.Device {
		t.Errorf("Device = %q; want %q", got.Device, r.Device)
	}
	if _, err := h.Store.Record(fmt.Sprintf("%032x", 99)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Record(unknown) error = %v; want store.ErrNotFound", err)
	}
	// A renewal link is recorded by UpdateRecord.
	done.RenewedBy = fmt.Sprintf("%032x", 2)
	if err := h.Store.UpdateRecord(done); err != nil {
		t.Fatal(err)
	}
	sameRecord(t, mustRecord(t, h.Store, r.Serial), done)
}

func testStoreReserveTaken(t *testing.T, h *Harness) {
	first := Issue(t, h.Store, 1, "alice")
	again := storePending(1, "bob")
	if _, err := h.Store.Reserve(again); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Reserve(taken serial) error = %v; want fs.ErrExist", err)
	}
	sameRecord(t, mustRecord(t, h.Store, first.Serial), first)
	// In a group, a taken serial fails the whole group.
	group := []*store.Record{storePending(2, "carol"), storePending(1, "dave")}
	if _, err := h.Store.ReserveGroup(group); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("ReserveGroup(with a taken serial) error = %v; want fs.ErrExist", err)
	}
	if r, err := h.Store.Record(group[0].Serial); err == nil && r.Status == store.StatusPending {
		t.Errorf("the group's other serial is pending after a failed ReserveGroup: %s", store.EncodeRecord(r))
	}
}

func testStoreGroup(t *testing.T, h *Harness) {
	var group, done []*store.Record
	for i := range 5 {
		group = append(group, storePending(10+i, fmt.Sprintf("n%d", i)))
	}
	res, err := h.Store.ReserveGroup(group)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(group) {
		t.Fatalf("%d reservations for %d records", len(res), len(group))
	}
	for _, r := range group {
		done = append(done, storeCompleted(r))
	}
	if err := h.Store.CompleteGroup(res, done); err != nil {
		t.Fatal(err)
	}
	for _, r := range done {
		sameRecord(t, mustRecord(t, h.Store, r.Serial), r)
	}
}

func testStoreVoid(t *testing.T, h *Harness) {
	r := storePending(1, "alice")
	res, err := h.Store.Reserve(r)
	if err != nil {
		t.Fatal(err)
	}
	res.Release()
	void := *r
	void.Status = store.StatusVoid
	if err := h.Store.PutRecord(&void); err != nil {
		t.Fatal(err)
	}
	sameRecord(t, mustRecord(t, h.Store, r.Serial), &void)
	recs, err := h.Store.RecordsByName("alice")
	if err != nil || len(recs) != 0 {
		t.Errorf("RecordsByName(alice) = %d records, %v; want none: a void serial is no certificate", len(recs), err)
	}
}

func testStoreByName(t *testing.T, h *Harness) {
	// Issued out of serial order: by name they come oldest first.
	b := Issue(t, h.Store, 9, "alice")
	b.IssuedAt = storeT0.Add(time.Hour)
	if err := h.Store.PutRecord(b); err != nil {
		t.Fatal(err)
	}
	a := Issue(t, h.Store, 20, "alice")
	Issue(t, h.Store, 5, "bob")
	pending := storePending(30, "alice")
	if _, err := h.Store.Reserve(pending); err != nil {
		t.Fatal(err)
	}
	recs, err := h.Store.RecordsByName("alice")
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
	if recs, err := h.Store.RecordsByName("nobody"); err != nil || len(recs) != 0 {
		t.Errorf("RecordsByName(nobody) = %v, %v; want none", recs, err)
	}
}

func testStoreRecords(t *testing.T, h *Harness) {
	var want []string
	for _, n := range []int{0x300, 7, 0x1ff, 0x42} {
		want = append(want, Issue(t, h.Store, n, fmt.Sprintf("r%d", n)).Serial)
	}
	slices.Sort(want)
	var got []string
	for r, err := range h.Store.Records() {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Serial)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Records() = %v; want %v", got, want)
	}
	parts, err := h.Store.RecordParts()
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

func testStoreRevoke(t *testing.T, h *Harness) {
	stamp0, err := h.Store.RevocationStamp()
	if err != nil {
		t.Fatal(err)
	}
	a, b := Issue(t, h.Store, 1, "alice"), Issue(t, h.Store, 2, "bob")
	for _, r := range []*store.Record{a, b} {
		r.Status, r.RevokedAt, r.Reason = store.StatusRevoked, storeT0.Add(time.Minute), "keyCompromise"
	}
	if err := h.Store.RevokeRecords([]*store.Record{a, b}); err != nil {
		t.Fatal(err)
	}
	sameRecord(t, mustRecord(t, h.Store, a.Serial), a)
	stamp1, err := h.Store.RevocationStamp()
	if err != nil || stamp1 == stamp0 {
		t.Errorf("RevocationStamp() after a revocation = %v, %v; want other than %v", stamp1, err, stamp0)
	}
	// A hold lifted: the latest event of a serial wins.
	if err := h.Store.AppendRevocations(store.RevEvent{Serial: b.Serial, Lifted: true}); err != nil {
		t.Fatal(err)
	}
	// A revocation without a record (restored from a CRL).
	lone := store.RevEvent{Serial: fmt.Sprintf("%032x", 3), RevokedAt: storeT0, Reason: "superseded", NotAfter: storeT0.AddDate(1, 0, 0)}
	if err := h.Store.AppendRevocations(lone); err != nil {
		t.Fatal(err)
	}
	events, err := h.Store.LatestRevocations()
	if err != nil {
		t.Fatal(err)
	}
	var got []store.RevEvent
	for i := range events {
		got = append(got, events[i].RevEvent())
	}
	want := []store.RevEvent{store.EventOf(a), {Serial: b.Serial, Lifted: true}, lone}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("LatestRevocations() = %+v; want %+v", got, want)
	}
	if stamp2, _ := h.Store.RevocationStamp(); stamp2 == stamp1 {
		t.Errorf("RevocationStamp() did not change after an append")
	}
}

// EmptyCRL signs, with the harness's CA, an empty CRL numbered n.
func EmptyCRL(t *testing.T, h *Harness, n int64) []byte {
	t.Helper()
	der, err := revoke.Build(revoke.Params{Issuer: h.Cert, Signer: h.Signer, Number: big.NewInt(n),
		ThisUpdate: storeT0, NextUpdate: storeT0.Add(24 * time.Hour)}, func(func(revoke.Entry) bool) {})
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func testStoreCRLNumber(t *testing.T, h *Harness) {
	last, err := h.Store.LastCRLNumber()
	if err != nil {
		t.Fatal(err)
	}
	// From the clock in milliseconds, when that is higher.
	n1, err := h.Store.NextCRLNumber(storeT0)
	if err != nil {
		t.Fatal(err)
	}
	if want := big.NewInt(storeT0.UnixMilli()); last.Cmp(want) < 0 && n1.Cmp(want) != 0 {
		t.Errorf("NextCRLNumber(t0) = %s; want %s", n1, want)
	}
	// Strictly increasing, when the clock goes back, and across handles.
	n2, err := h.Open(t).NextCRLNumber(storeT0.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if want := new(big.Int).Add(n1, big.NewInt(1)); n2.Cmp(want) != 0 {
		t.Errorf("NextCRLNumber(clock back) = %s; want %s", n2, want)
	}
	if got, err := h.Store.LastCRLNumber(); err != nil || got.Cmp(n2) != 0 {
		t.Errorf("LastCRLNumber() = %v, %v; want %s", got, err, n2)
	}
	// A saved CRL's number counts too.
	high := new(big.Int).Add(n2, big.NewInt(1000))
	if saved, err := h.Store.SaveCRL(high, EmptyCRL(t, h, high.Int64())); err != nil || !saved {
		t.Fatalf("SaveCRL(%s) = %v, %v; want saved", high, saved, err)
	}
	if _, err := h.Store.RaiseCRLNumber(high); err != nil {
		t.Fatal(err)
	}
	n3, err := h.Store.NextCRLNumber(storeT0)
	if err != nil {
		t.Fatal(err)
	}
	if n3.Cmp(high) <= 0 {
		t.Errorf("NextCRLNumber() = %s after CRL %s was saved; want higher", n3, high)
	}
}

func testStoreCRL(t *testing.T, h *Harness) {
	if _, err := h.Store.CRL(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("CRL() of a new store error = %v; want fs.ErrNotExist", err)
	}
	if _, err := h.Store.CRLStamp(); !errors.Is(err, store.ErrNoCRL) {
		t.Errorf("CRLStamp() of a new store error = %v; want store.ErrNoCRL", err)
	}
	if _, err := h.Store.ReadCRL(); !errors.Is(err, store.ErrNoCRL) {
		t.Errorf("ReadCRL() of a new store error = %v; want store.ErrNoCRL", err)
	}
	// Without a CRL, the check of the published copy has one problem to
	// report: a fact, which names no command (the program adds the advice).
	var none []string
	if crl, err := h.Store.CheckCRL(func(s string) { none = append(none, "fixed: "+s) }, func(s string) { none = append(none, s) }); crl != nil || err != nil ||
		len(none) != 1 || strings.HasPrefix(none[0], "fixed: ") || strings.Contains(none[0], "minica ") {
		t.Errorf("CheckCRL() of a new store = %v, %v, notes %q; want no CRL and one problem naming no command", crl, err, none)
	}
	n, err := h.Store.NextCRLNumber(storeT0)
	if err != nil {
		t.Fatal(err)
	}
	der := EmptyCRL(t, h, n.Int64())
	if saved, err := h.Store.SaveCRL(n, der); err != nil || !saved {
		t.Fatalf("SaveCRL(%s) = %v, %v; want saved", n, saved, err)
	}
	if got, err := h.Store.CRL(); err != nil || !bytes.Equal(got, der) {
		t.Errorf("CRL() = %d bytes, %v; want the CRL saved", len(got), err)
	}
	stamp, err := h.Store.CRLStamp()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := h.Store.ReadCRL()
	if err != nil || !bytes.Equal(pub.DER, der) || pub.Stamp != stamp || pub.CRL.Number().Cmp(n) != 0 {
		t.Fatalf("ReadCRL() = %+v, %v; want CRL %s with stamp %v", pub, err, n, stamp)
	}
	// A lower number never replaces the current CRL.
	lower := new(big.Int).Sub(n, big.NewInt(1))
	if saved, err := h.Store.SaveCRL(lower, EmptyCRL(t, h, lower.Int64())); err != nil || saved {
		t.Errorf("SaveCRL(lower number) = %v, %v; want not saved", saved, err)
	}
	if got, _ := h.Store.CRL(); !bytes.Equal(got, der) {
		t.Errorf("a lower number replaced the current CRL")
	}
	// A higher one does, with a new stamp; the check of the published
	// copy finds nothing to repair.
	n2, err := h.Store.NextCRLNumber(storeT0)
	if err != nil {
		t.Fatal(err)
	}
	der2 := EmptyCRL(t, h, n2.Int64())
	if saved, err := h.Store.SaveCRL(n2, der2); err != nil || !saved {
		t.Fatalf("SaveCRL(%s) = %v, %v; want saved", n2, saved, err)
	}
	if s2, err := h.Store.CRLStamp(); err != nil || s2 == stamp {
		t.Errorf("CRLStamp() = %v, %v after a new CRL; want other than %v", s2, err, stamp)
	}
	var notes []string
	note := func(s string) { notes = append(notes, s) }
	crl, err := h.Store.CheckCRL(note, note)
	if err != nil || crl == nil || crl.Number().Cmp(n2) != 0 || len(notes) != 0 {
		t.Errorf("CheckCRL() = %v, %v, notes %q; want CRL %s and nothing to say", crl, err, notes, n2)
	}
}

func testStoreEnrollments(t *testing.T, h *Harness) {
	const a1, a2, b1 = "0000000000a1", "0000000000a2", "0000000000b1"
	for _, e := range []store.EnrollmentData{{ID: a1, Name: "alice"}, {ID: b1, Name: "bob"}, {ID: a2, Name: "alice"}} {
		e.Data = []byte(`{"id":"` + e.ID + `"}` + "\n")
		if err := h.Store.CreateEnrollment(e); err != nil {
			t.Fatalf("CreateEnrollment(%s): %v", e.ID, err)
		}
	}
	if err := h.Store.CreateEnrollment(store.EnrollmentData{ID: a1, Name: "carol", Data: []byte("{}\n")}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateEnrollment(taken ID) error = %v; want fs.ErrExist", err)
	}
	if got, err := h.Store.EnrollmentByName("alice"); err != nil || got.ID != a2 {
		t.Errorf("EnrollmentByName(alice) = %+v, %v; want %s, the latest", got, err, a2)
	}
	if _, err := h.Store.EnrollmentByName("dave"); !errors.Is(err, store.ErrEnrollmentUnknown) {
		t.Errorf("EnrollmentByName(dave) error = %v; want store.ErrEnrollmentUnknown", err)
	}
	used := store.EnrollmentData{ID: a1, Name: "alice", Data: []byte(`{"id":"` + a1 + `","status":"used"}` + "\n")}
	if err := h.Store.PutEnrollment(used); err != nil {
		t.Fatal(err)
	}
	if got, err := h.Store.Enrollment(a1); err != nil || !bytes.Equal(got.Data, used.Data) || got.ID != a1 || got.Where == "" {
		t.Errorf("Enrollment(%s) = %+v, %v; want %s", a1, got, err, used.Data)
	}
	if _, err := h.Store.Enrollment("0000000000ff"); !errors.Is(err, store.ErrEnrollmentUnknown) {
		t.Errorf("Enrollment(unknown) error = %v; want store.ErrEnrollmentUnknown", err)
	}
	var ids []string
	for e, err := range h.Store.Enrollments() {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	if want := []string{a1, a2, b1}; !slices.Equal(ids, want) {
		t.Errorf("Enrollments() = %v; want %v (ID order)", ids, want)
	}
}

func testStoreLock(t *testing.T, h *Harness) {
	unlock, err := h.Store.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	other := h.Open(t)
	start := time.Now()
	_, err = other.Lock(100 * time.Millisecond)
	var le *store.LockError
	if !errors.As(err, &le) || !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second Lock() error = %v; want a *store.LockError matching store.ErrLocked", err)
	}
	if time.Since(start) < 100*time.Millisecond {
		t.Errorf("second Lock() gave up after %v; want it to wait its timeout", time.Since(start))
	}
	// Writes of the holder go on.
	Issue(t, h.Store, 1, "alice")
	unlock()
	unlock2, err := other.Lock(time.Second)
	if err != nil {
		t.Fatalf("Lock() after the holder let go: %v", err)
	}
	unlock2()
}

func testStoreLockLost(t *testing.T, h *Harness) {
	if h.LoseLock == nil {
		t.Skip("the engine's lock lasts as long as its holder")
	}
	unlock, err := h.Store.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	Issue(t, h.Store, 1, "alice")
	h.LoseLock(t)
	r := storePending(2, "bob")
	if _, err := h.Store.Reserve(r); !errors.Is(err, store.ErrStoreLockLost) {
		t.Fatalf("Reserve() after the lock was lost: error = %v; want store.ErrStoreLockLost", err)
	}
	if err := h.Store.AppendRevocations(store.RevEvent{Serial: fmt.Sprintf("%032x", 1), Lifted: true}); !errors.Is(err, store.ErrStoreLockLost) {
		t.Errorf("AppendRevocations() after the lock was lost: error = %v; want store.ErrStoreLockLost", err)
	}
	// Another process takes the lock.
	unlock2, err := h.Open(t).Lock(5 * time.Second)
	if err != nil {
		t.Fatalf("Lock() by another process after the loss: %v", err)
	}
	unlock2()
}

// testStoreLoad loads the whole of one store, read through the interface,
// into an empty one: what a copy between any two engines does.
func testStoreLoad(t *testing.T, h *Harness, newStore func(t *testing.T) *Harness) {
	src := newStore(t)
	a := Issue(t, src.Store, 1, "alice")
	Issue(t, src.Store, 2, "bob")
	a.Status, a.RevokedAt, a.Reason = store.StatusRevoked, storeT0, "superseded"
	if err := src.Store.RevokeRecords([]*store.Record{a}); err != nil {
		t.Fatal(err)
	}
	enrollment := store.EnrollmentData{ID: "0000000000a1", Name: "alice", Data: []byte(`{"id":"0000000000a1"}` + "\n")}
	n, err := src.Store.NextCRLNumber(storeT0)
	if err != nil {
		t.Fatal(err)
	}
	der := EmptyCRL(t, src, n.Int64())
	// A delta numbered above LastNumber: the copy's next number is above
	// it all the same.
	deltaNumber := new(big.Int).Add(n, big.NewInt(5))
	delta := DeltaCRL(t, src, deltaNumber, n)
	objects := []store.Object{object("accounts", "acct1", `{"a":1}`), object("orders", "o1", `{"o":1}`), object("orders", "o2", `{"o":2}`)}
	for _, o := range objects {
		if err := src.Store.CreateObject(o); err != nil {
			t.Fatal(err)
		}
	}
	contents := func() *store.Contents {
		events, err := src.Store.LatestRevocations()
		if err != nil || len(events) != 1 {
			t.Fatalf("LatestRevocations() = %d events, %v; want 1", len(events), err)
		}
		return &store.Contents{Records: src.Store.Records(), Events: []store.RevEvent{events[0].RevEvent()},
			Enrollments: []store.EnrollmentData{enrollment}, Objects: allObjects(t, src.Store), LastNumber: n, CRL: der, CRLNumber: n,
			DeltaCRL: delta, DeltaNumber: deltaNumber}
	}
	if got, err := h.Store.Load(contents()); err != nil || got != 2 {
		t.Fatalf("Load() = %d, %v; want 2 records", got, err)
	}
	sameRecord(t, mustRecord(t, h.Store, a.Serial), a)
	if events, err := h.Store.LatestRevocations(); err != nil || len(events) != 1 {
		t.Errorf("LatestRevocations() of the copy = %d events, %v; want 1", len(events), err)
	}
	if got, err := h.Store.EnrollmentByName("alice"); err != nil || !bytes.Equal(got.Data, enrollment.Data) {
		t.Errorf("EnrollmentByName(alice) of the copy = %+v, %v", got, err)
	}
	if last, err := h.Store.LastCRLNumber(); err != nil || last.Cmp(deltaNumber) < 0 {
		t.Errorf("LastCRLNumber() of the copy = %v, %v; want at least %s, its delta CRL's", last, err, deltaNumber)
	}
	if got, err := h.Store.CRL(); err != nil || !bytes.Equal(got, der) {
		t.Errorf("CRL() of the copy: %v; want the source's", err)
	}
	wantDelta(t, h.Store, delta, deltaNumber)
	for _, o := range objects {
		wantObject(t, h.Store, o)
	}
	if got := allObjects(t, h.Store); len(got) != len(objects) {
		t.Errorf("the copy holds %d ACME objects; want %d", len(got), len(objects))
	}
	// A store that holds records takes no copy, nor one that holds only
	// ACME objects.
	if _, err := h.Store.Load(contents()); !errors.Is(err, store.ErrStoreNotEmpty) {
		t.Errorf("a second Load() error = %v; want ErrStoreNotEmpty", err)
	}
	other := newStore(t)
	if err := other.Store.CreateObject(object("accounts", "acct9", "{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Store.Load(contents()); !errors.Is(err, store.ErrStoreNotEmpty) {
		t.Errorf("Load() into a store of ACME objects error = %v; want ErrStoreNotEmpty", err)
	}
	for r := range other.Store.Records() {
		t.Fatalf("a refused Load() wrote record %s", r.Serial)
	}
	// A copy without a delta CRL leaves none in the target, whatever it
	// held before.
	target := newStore(t)
	if _, err := target.Store.SaveDeltaCRL(deltaNumber, delta); err != nil {
		t.Fatal(err)
	}
	without := contents()
	without.DeltaCRL, without.DeltaNumber = nil, nil
	if _, err := target.Store.Load(without); err != nil {
		t.Fatal(err)
	}
	if _, _, err := target.Store.DeltaCRL(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("DeltaCRL() of a copy of a store without one: error = %v; want fs.ErrNotExist", err)
	}
}

// allObjects returns every ACME object of db, kind by kind, as a copy
// reads them.
func allObjects(t *testing.T, db store.Store) []store.Object {
	t.Helper()
	kinds, err := db.ObjectKinds()
	if err != nil {
		t.Fatal(err)
	}
	var all []store.Object
	for _, kind := range kinds {
		for o, err := range db.Objects(kind) {
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, o)
		}
	}
	return all
}

// testStoreCloseTwice closes a second handle twice: the CA closes its
// store once more when a long-running command ends.
func testStoreCloseTwice(t *testing.T, h *Harness) {
	other := h.Open(t)
	for i := range 2 {
		if err := other.Close(); err != nil {
			t.Fatalf("Close() #%d: %v", i+1, err)
		}
	}
}
