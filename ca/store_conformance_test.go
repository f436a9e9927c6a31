package ca

import (
	"bytes"
	"errors"
	"io/fs"
	"testing"
	"time"

	"minica/ca/store"
	"minica/ca/store/storetest"
)

// The conformance suite of the engines is package storetest; this file
// gives it the CA's engines, and tests what ca builds over them.

var storeT0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// TestCopyStore copies a file store into an empty file store through
// copyStore, which reads the source through the interface
// (TestCopyStorePG copies it into PostgreSQL).
func TestCopyStore(t *testing.T) { testCopyStore(t, storeHarnessFile(t)) }

func testCopyStore(t *testing.T, h *storetest.Harness) {
	src := storeHarnessFile(t) // any engine: the copy goes through the interface
	a := storetest.Issue(t, src.Store, 1, "alice")
	storetest.Issue(t, src.Store, 2, "bob")
	a.Status, a.RevokedAt, a.Reason = StatusRevoked, storeT0, "superseded"
	if err := src.Store.RevokeRecords([]*Record{a}); err != nil {
		t.Fatal(err)
	}
	if err := src.Store.CreateEnrollment(storedEnrollment{ID: "0000000000a1", Name: "alice",
		Data: encodeEnrollment(&Enrollment{Version: 1, ID: "0000000000a1", Name: "alice", CreatedAt: storeT0})}); err != nil {
		t.Fatal(err)
	}
	n, err := src.Store.NextCRLNumber(storeT0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Store.SaveCRL(n, storetest.EmptyCRL(t, src, n.Int64())); err != nil {
		t.Fatal(err)
	}
	dn, err := src.Store.NextCRLNumber(storeT0)
	if err != nil {
		t.Fatal(err)
	}
	delta := storetest.DeltaCRL(t, src, dn, n)
	if _, err := src.Store.SaveDeltaCRL(dn, delta); err != nil {
		t.Fatal(err)
	}
	acct := store.Object{Kind: "accounts", ID: "acct1", Data: []byte(`{"status":"valid"}`)}
	if err := src.Store.CreateObject(acct); err != nil {
		t.Fatal(err)
	}
	const nonce = "bm90LWNvcGllZC1ub25jZQ"
	if err := src.Store.AddNonce(nonce, storeT0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	res, err := copyStore(src.Store, h.Store, src.Cert)
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 2 || res.Revocations != 1 || res.Enrollments != 1 || res.Objects != 1 || res.CRLNumber.Cmp(n) != 0 {
		t.Errorf("copyStore() = %+v; want 2 records, 1 revocation, 1 enrollment, 1 ACME object, CRL %s", res, n)
	}
	if got, err := h.Store.Object(acct.Kind, acct.ID); err != nil || !bytes.Equal(got.Data, acct.Data) {
		t.Errorf("Object(%s, %s) of the copy = %q, %v; want %q", acct.Kind, acct.ID, got.Data, err, acct.Data)
	}
	// Nonces stay behind: the copy never accepts one of the source's.
	if ok, err := h.Store.UseNonce(nonce, storeT0); ok || err != nil {
		t.Errorf("UseNonce(the source's nonce) on the copy = %v, %v; want false", ok, err)
	}
	if got, err := h.Store.Record(a.Serial); err != nil || !bytes.Equal(store.EncodeRecord(got), store.EncodeRecord(a)) {
		t.Errorf("Record(%s) of the copy = %+v, %v; want %+v", a.Serial, got, err, a)
	}
	if events, err := h.Store.LatestRevocations(); err != nil || len(events) != 1 {
		t.Errorf("LatestRevocations() of the copy = %d events, %v; want 1", len(events), err)
	}
	if _, err := h.Store.EnrollmentByName("alice"); err != nil {
		t.Errorf("EnrollmentByName(alice) of the copy: %v", err)
	}
	if last, err := h.Store.LastCRLNumber(); err != nil || last.Cmp(dn) < 0 {
		t.Errorf("LastCRLNumber() of the copy = %v, %v; want at least %s", last, err, dn)
	}
	if der, number, err := h.Store.DeltaCRL(); err != nil || number.Cmp(dn) != 0 || !bytes.Equal(der, delta) {
		t.Errorf("DeltaCRL() of the copy = number %v, %v; want the source's delta %s", number, err, dn)
	}
	// A store that holds records takes no copy.
	if _, err := copyStore(src.Store, h.Store, src.Cert); !errors.Is(err, ErrStoreNotEmpty) {
		t.Errorf("a second copy error = %v; want ErrStoreNotEmpty", err)
	}
}

// storeHarnessFile returns the file store of a new CA directory.
func storeHarnessFile(t *testing.T) *storetest.Harness {
	c, signer := newTestCA(t, InitOptions{})
	removeFirstCRL(t, c)
	return &storetest.Harness{Store: c.db, Cert: c.Cert, Signer: signer, Dir: c.dir, Open: reopener(c)}
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

func TestFileStoreConformance(t *testing.T) { storetest.Run(t, storeHarnessFile) }
