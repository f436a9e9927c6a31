package revoke_test

import (
	"bytes"
	"errors"
	"math/big"
	"testing"
	"time"

	"minica/internal/testca"
	"minica/revoke"
)

// PeekCRLNumber reads the number of CRLs small and large (the list of
// entries skipped by its length), complete or delta, as the verified
// CRLNumber does, and refuses what is not a CRL.
func TestPeekCRLNumber(t *testing.T) {
	ca := newCA(t, "Peek Root", testca.NewKey(t), testNow)
	many := make([]revoke.Entry, 5000) // about 250 KB: past the first read
	for i := range many {
		many[i] = revoke.Entry{Serial: big.NewInt(int64(i + 1)), RevokedAt: testNow.Add(-time.Hour), Reason: revoke.KeyCompromise}
	}
	build := func(number, base int64, entries []revoke.Entry) []byte {
		p := revoke.Params{Issuer: ca.Cert, Signer: ca.Key, Number: big.NewInt(number),
			ThisUpdate: testNow, NextUpdate: testNow.Add(time.Hour)}
		if base > 0 {
			p.DeltaBase = big.NewInt(base)
		}
		der, err := revoke.Build(p, func(yield func(revoke.Entry) bool) {
			for _, e := range entries {
				if !yield(e) {
					return
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	for _, tt := range []struct {
		name string
		der  []byte
		want int64
	}{
		{"empty", build(7, 0, nil), 7},
		{"one entry", build(1796686556662, 0, many[:1]), 1796686556662},
		{"large", build(42, 0, many), 42},
		{"delta", build(43, 42, many[:3]), 43},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := revoke.PeekCRLNumber(bytes.NewReader(tt.der), int64(len(tt.der)))
			if err != nil || got.Int64() != tt.want {
				t.Fatalf("PeekCRLNumber() = %v, %v; want %d", got, err, tt.want)
			}
		})
	}
	der := build(9, 0, many)
	for _, bad := range [][]byte{nil, []byte("not a CRL"), der[:len(der)/2], der[:100], append([]byte{0x31}, der[1:]...)} {
		if n, err := revoke.PeekCRLNumber(bytes.NewReader(bad), int64(len(bad))); !errors.Is(err, revoke.ErrMalformed) {
			t.Errorf("PeekCRLNumber(%d bytes) = %v, %v; want ErrMalformed", len(bad), n, err)
		}
	}
}
