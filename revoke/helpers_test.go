package revoke_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"iter"
	"math/big"
	"slices"
	"testing"
	"time"

	"minica/internal/testca"
	"minica/revoke"
)

// newCA returns a self-signed CA for key named cn, valid around now.
func newCA(t testing.TB, cn string, key crypto.Signer, now time.Time) *testca.CA {
	t.Helper()
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	skid := sha1.Sum(pubDER)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"minica tests"}},
		NotBefore:             now.Add(-24 * time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		SubjectKeyId:          skid[:],
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testca.CA{Cert: cert, Key: key}
}

// keyTypes returns one key of each type Build supports.
func keyTypes(t testing.TB) map[string]crypto.Signer {
	t.Helper()
	p256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]crypto.Signer{"P-256": p256, "P-384": p384, "RSA-2048": rsaKey, "Ed25519": edKey}
}

var synthReasons = []revoke.Reason{revoke.Unspecified, revoke.KeyCompromise, revoke.Superseded,
	revoke.CessationOfOperation, revoke.AffiliationChanged, revoke.PrivilegeWithdrawn}

// synthEntry returns entry i of a deterministic sequence with distinct
// 128-bit serials, revoked before at and cycling through the reason codes;
// serial receives the serial number.
func synthEntry(i int, at time.Time, serial *big.Int) revoke.Entry {
	var buf [16]byte
	binary.BigEndian.PutUint64(buf[:8], uint64(i)*0x9e3779b97f4a7c15|1<<63)
	binary.BigEndian.PutUint64(buf[8:], uint64(i))
	return revoke.Entry{
		Serial:    serial.SetBytes(buf[:]),
		RevokedAt: at.Add(-time.Duration(i%86400) * time.Second),
		Reason:    synthReasons[i%len(synthReasons)],
	}
}

// synthEntries yields n synthetic entries, each with its own big.Int.
func synthEntries(n int, at time.Time) iter.Seq[revoke.Entry] {
	return func(yield func(revoke.Entry) bool) {
		for i := range n {
			if !yield(synthEntry(i, at, new(big.Int))) {
				return
			}
		}
	}
}

// streamEntries yields the same entries as synthEntries through one reused
// big.Int, the way a database scan decodes into one buffer; Build must not
// keep it.
func streamEntries(n int, at time.Time) iter.Seq[revoke.Entry] {
	return func(yield func(revoke.Entry) bool) {
		serial := new(big.Int)
		for i := range n {
			if !yield(synthEntry(i, at, serial)) {
				return
			}
		}
	}
}

// stdlibEntries converts entries for x509.CreateRevocationList.
func stdlibEntries(entries iter.Seq[revoke.Entry]) []x509.RevocationListEntry {
	var out []x509.RevocationListEntry
	for e := range entries {
		out = append(out, x509.RevocationListEntry{SerialNumber: e.Serial, RevocationTime: e.RevokedAt, ReasonCode: int(e.Reason)})
	}
	return out
}

func buildOrFatal(t testing.TB, p revoke.Params, entries []revoke.Entry) []byte {
	t.Helper()
	der, err := revoke.Build(p, slices.Values(entries))
	if err != nil {
		t.Fatalf("Build() error = %v", err)
	}
	return der
}

// synthCRL signs a CRL of ca, number 1, valid for an hour from testNow,
// listing synthEntries(n).
func synthCRL(t testing.TB, ca *testca.CA, n int) []byte {
	t.Helper()
	der, err := revoke.Build(revoke.Params{Issuer: ca.Cert, Signer: ca.Key, Number: big.NewInt(1),
		ThisUpdate: testNow, NextUpdate: testNow.Add(time.Hour)}, synthEntries(n, testNow))
	if err != nil {
		t.Fatal(err)
	}
	return der
}
