package revoke_test

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"minica/internal/testca"
	"minica/revoke"
)

var update = flag.Bool("update", false, "regenerate the CRLs and CA certificate in testdata/")

// testdata holds a CA certificate (its key is thrown away) and CRLs it
// signed; they seed FuzzParseCRL.
var seedCRLs = map[string]struct {
	entries int
	number  int64
	pem     bool
}{
	"empty.crl":    {entries: 0, number: 1},
	"entries.crl":  {entries: 5, number: 2},
	"entries.pem":  {entries: 5, number: 3, pem: true},
	"hundred.crl":  {entries: 100, number: 4},
	"hundred2.pem": {entries: 100, number: 5, pem: true},
}

func TestTestdata(t *testing.T) {
	if *update {
		writeTestdata(t)
	}
	ca := readTestdataCA(t)
	for name, want := range seedCRLs {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			crl := parseOrFatal(t, data, ca)
			if crl.Len() != want.entries || crl.Number().Int64() != want.number {
				t.Errorf("Len(), Number() = %d, %v; want %d, %d", crl.Len(), crl.Number(), want.entries, want.number)
			}
			if got := strings.HasPrefix(string(data), "-----BEGIN X509 CRL-----"); got != want.pem {
				t.Errorf("PEM = %v; want %v", got, want.pem)
			}
		})
	}
}

func writeTestdata(t *testing.T) {
	ca := newCA(t, "Fuzz Seed Root", testca.NewKey(t), testNow)
	if err := os.WriteFile(filepath.Join("testdata", "ca.pem"), ca.PEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, seed := range seedCRLs {
		entries := sampleEntries(testNow)
		if seed.entries > len(entries) {
			entries = append(entries, slices.Collect(synthEntries(seed.entries-len(entries), testNow))...)
		}
		der := buildOrFatal(t, revoke.Params{Issuer: ca.Cert, Signer: ca.Key, Number: big.NewInt(seed.number),
			ThisUpdate: testNow, NextUpdate: testNow.Add(7 * 24 * time.Hour)}, entries[:seed.entries])
		if seed.pem {
			der = pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der})
		}
		if err := os.WriteFile(filepath.Join("testdata", name), der, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readTestdataCA(t testing.TB) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatal("testdata/ca.pem: no PEM block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// FuzzParseCRL feeds arbitrary bytes to ParseCRL: it must never panic, must
// fail only with one of its sentinels, and a CRL it accepts must answer
// consistently for every entry it lists.
func FuzzParseCRL(f *testing.F) {
	ca := readTestdataCA(f)
	names, err := filepath.Glob(filepath.Join("testdata", "*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		crl, err := revoke.ParseCRL(data, ca)
		if err != nil {
			if !errors.Is(err, revoke.ErrMalformed) && !errors.Is(err, revoke.ErrWrongIssuer) && !errors.Is(err, revoke.ErrBadSignature) &&
				!errors.Is(err, revoke.ErrIncomplete) {
				t.Fatalf("ParseCRL() error = %v; want one of the sentinels", err)
			}
			return
		}
		n := 0
		for e := range crl.Entries() {
			got, ok := crl.Lookup(e.Serial)
			if !ok || got.Reason != e.Reason || !got.RevokedAt.Equal(e.RevokedAt) {
				t.Fatalf("Lookup(%x) = %+v, %v; want %+v", e.Serial, got, ok, e)
			}
			n++
		}
		if n != crl.Len() {
			t.Fatalf("Entries() gave %d; Len() = %d", n, crl.Len())
		}
		crl.IsRevoked(big.NewInt(0x2a))
	})
}
