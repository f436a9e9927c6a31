package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"io/fs"
	"math/big"
	"strings"
	"testing"
	"time"

	"minica/ca/store"
)

// DeltaCRL signs, with the harness's CA, an empty delta CRL numbered n
// whose base CRL is numbered base: a critical deltaCRLIndicator (RFC 5280
// section 5.2.4), which a reader of complete CRLs refuses, so that an
// engine that judged the bytes it keeps would fail the suite.
func DeltaCRL(t *testing.T, h *Harness, n, base *big.Int) []byte {
	t.Helper()
	indicator, err := asn1.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{Number: n,
		ThisUpdate: storeT0, NextUpdate: storeT0.Add(time.Hour),
		ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 27}, Critical: true, Value: indicator}},
	}, h.Cert, h.Signer)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// nextNumber reserves the next CRL number of h's store.
func nextNumber(t *testing.T, h *Harness) *big.Int {
	t.Helper()
	n, err := h.Store.NextCRLNumber(storeT0)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// wantDelta fails t unless db's current delta CRL is der, numbered n.
func wantDelta(t *testing.T, db store.Store, der []byte, n *big.Int) {
	t.Helper()
	got, number, err := db.DeltaCRL()
	if err != nil || !bytes.Equal(got, der) || number.Cmp(n) != 0 {
		t.Errorf("DeltaCRL() = %d bytes numbered %v, %v; want the %d bytes of delta CRL %s", len(got), number, err, len(der), n)
	}
}

// wantDeltaCopy fails t unless the published copy of the delta CRL in
// h.Dir, crl-delta.pem and crl-delta.der, holds der, each file 0644.
func wantDeltaCopy(t *testing.T, h *Harness, der []byte) {
	t.Helper()
	if h.Dir == nil {
		t.Fatal("the harness gives no Dir, where the published copies are")
	}
	for _, f := range []string{store.DeltaCRLPEMFile, store.DeltaCRLDERFile} {
		info, err := h.Dir.Stat(f)
		if err != nil {
			t.Errorf("the published copy: %v", err)
			continue
		}
		if info.Mode() != 0o644 {
			t.Errorf("%s has mode %v; want -rw-r--r--", f, info.Mode())
		}
	}
	if got, err := h.Dir.ReadFile(store.DeltaCRLDERFile); err != nil || !bytes.Equal(got, der) {
		t.Errorf("%s holds %d bytes, %v; want the %d bytes of the current delta CRL", store.DeltaCRLDERFile, len(got), err, len(der))
	}
	data, err := h.Dir.ReadFile(store.DeltaCRLPEMFile)
	block, rest := pem.Decode(data)
	if err != nil || block == nil || block.Type != "X509 CRL" || !bytes.Equal(block.Bytes, der) || len(bytes.TrimSpace(rest)) != 0 {
		t.Errorf("%s = %q, %v; want one X509 CRL block of the current delta CRL", store.DeltaCRLPEMFile, data, err)
	}
}

func deltaStamp(t *testing.T, db store.Store) store.FileStamp {
	t.Helper()
	stamp, err := db.DeltaCRLStamp()
	if err != nil {
		t.Fatal(err)
	}
	return stamp
}

func testStoreDeltaCRL(t *testing.T, h *Harness) {
	if _, _, err := h.Store.DeltaCRL(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("DeltaCRL() of a new store error = %v; want fs.ErrNotExist", err)
	}
	if _, err := h.Store.DeltaCRLStamp(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("DeltaCRLStamp() of a new store error = %v; want fs.ErrNotExist", err)
	}
	base := nextNumber(t, h)
	if _, err := h.Store.SaveCRL(base, EmptyCRL(t, h, base.Int64())); err != nil {
		t.Fatal(err)
	}
	n := nextNumber(t, h)
	der := DeltaCRL(t, h, n, base)
	// No number, a negative one or no bytes: an error, and nothing saved.
	for _, bad := range []struct {
		number *big.Int
		der    []byte
	}{{nil, der}, {big.NewInt(-1), der}, {n, nil}} {
		if saved, err := h.Store.SaveDeltaCRL(bad.number, bad.der); saved || err == nil || !strings.Contains(err.Error(), "want a CRL number of at least 0 and the CRL's DER") {
			t.Errorf("SaveDeltaCRL(%v, %d bytes) = %v, %v; want an error saying what it wants", bad.number, len(bad.der), saved, err)
		}
	}
	if _, _, err := h.Store.DeltaCRL(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("DeltaCRL() after refused saves: error = %v; want fs.ErrNotExist", err)
	}
	if saved, err := h.Store.SaveDeltaCRL(n, der); err != nil || !saved {
		t.Fatalf("SaveDeltaCRL(%s) = %v, %v; want saved", n, saved, err)
	}
	wantDelta(t, h.Store, der, n)
	wantDelta(t, h.Open(t), der, n) // every handle
	wantDeltaCopy(t, h, der)
	stamp := deltaStamp(t, h.Store)

	// A lower number changes nothing.
	lower := new(big.Int).Sub(n, big.NewInt(1))
	if saved, err := h.Store.SaveDeltaCRL(lower, DeltaCRL(t, h, lower, base)); err != nil || saved {
		t.Errorf("SaveDeltaCRL(lower number) = %v, %v; want not saved", saved, err)
	}
	wantDelta(t, h.Store, der, n)
	wantDeltaCopy(t, h, der)
	if got := deltaStamp(t, h.Store); got != stamp {
		t.Errorf("DeltaCRLStamp() = %v after a refused save; want %v, unchanged", got, stamp)
	}

	// A higher one replaces it, with a new stamp.
	n2 := nextNumber(t, h)
	der2 := DeltaCRL(t, h, n2, base)
	if saved, err := h.Store.SaveDeltaCRL(n2, der2); err != nil || !saved {
		t.Fatalf("SaveDeltaCRL(%s) = %v, %v; want saved", n2, saved, err)
	}
	wantDelta(t, h.Store, der2, n2)
	wantDeltaCopy(t, h, der2)
	stamp2 := deltaStamp(t, h.Store)
	if stamp2 == stamp {
		t.Errorf("DeltaCRLStamp() = %v after a new delta CRL; want other than before", stamp2)
	}
	// The same number saves again: what a retry after a crash does.
	if saved, err := h.Store.SaveDeltaCRL(n2, der2); err != nil || !saved {
		t.Errorf("SaveDeltaCRL(the current number) = %v, %v; want saved", saved, err)
	}

	// A complete CRL saved later leaves the delta as it is, and the
	// delta's number counts in the one sequence.
	n3 := nextNumber(t, h)
	if n3.Cmp(n2) <= 0 {
		t.Errorf("NextCRLNumber() = %s after delta CRL %s; want higher", n3, n2)
	}
	if saved, err := h.Store.SaveCRL(n3, EmptyCRL(t, h, n3.Int64())); err != nil || !saved {
		t.Fatalf("SaveCRL(%s) = %v, %v; want saved", n3, saved, err)
	}
	wantDelta(t, h.Store, der2, n2)
	wantDeltaCopy(t, h, der2)
}

// testStoreDeltaCRLCopyRepaired loses the delta CRL's published copy, as
// a crash after the store saved the delta would: CheckCRL writes it again
// and says so.
func testStoreDeltaCRLCopyRepaired(t *testing.T, h *Harness) {
	base := nextNumber(t, h)
	if _, err := h.Store.SaveCRL(base, EmptyCRL(t, h, base.Int64())); err != nil {
		t.Fatal(err)
	}
	n := nextNumber(t, h)
	der := DeltaCRL(t, h, n, base)
	if _, err := h.Store.SaveDeltaCRL(n, der); err != nil {
		t.Fatal(err)
	}
	if err := h.Dir.Root().Remove(store.DeltaCRLDERFile); err != nil {
		t.Fatal(err)
	}
	if err := h.Dir.WriteAtomic(store.DeltaCRLPEMFile, []byte("stale\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var fixed, problems []string
	crl, err := h.Store.CheckCRL(func(s string) { fixed = append(fixed, s) }, func(s string) { problems = append(problems, s) })
	if err != nil || crl == nil || crl.Number().Cmp(base) != 0 {
		t.Fatalf("CheckCRL() = %v, %v; want CRL %s", crl, err, base)
	}
	if len(fixed) != 1 || !strings.Contains(fixed[0], store.DeltaCRLDERFile) || len(problems) != 0 {
		t.Errorf("CheckCRL() fixed %q, problems %q; want one repair naming %s", fixed, problems, store.DeltaCRLDERFile)
	}
	wantDeltaCopy(t, h, der)
	// Once repaired, there is nothing to say.
	fixed = nil
	if _, err := h.Store.CheckCRL(func(s string) { fixed = append(fixed, s) }, func(s string) { problems = append(problems, s) }); err != nil || len(fixed)+len(problems) != 0 {
		t.Errorf("a second CheckCRL() = %v, fixed %q, problems %q; want nothing to say", err, fixed, problems)
	}
}

// testStoreDeltaCRLNotified saves delta CRLs through one handle while
// another listens: the listener hears of one soon. A listener may start
// listening after it returns (a PostgreSQL LISTEN of its own connection),
// so the delta is saved again, a bounded number of times, until it hears.
func testStoreDeltaCRLNotified(t *testing.T, h *Harness) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.Open(t).CRLNotifications(ctx)
	if ch == nil {
		t.Skip("the engine's readers poll here: no notifications to hear")
	}
	base := nextNumber(t, h)
	n := nextNumber(t, h)
	der := DeltaCRL(t, h, n, base)
	for range 50 {
		if _, err := h.Store.SaveDeltaCRL(n, der); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ch:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatal("no CRL notification within 10s of saving a delta CRL")
}
