package testca

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"
)

// NewRoot returns a fresh root CA named cn that may sign intermediates
// (pathLen 1), valid from an hour ago for ten years.
func NewRoot(t testing.TB, cn string) *CA {
	t.Helper()
	key := NewKey(t)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          RandomSerial(t),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            1,
		SubjectKeyId:          keyID(t, key.Public()),
	}
	return sign(t, tmpl, tmpl, key, key)
}

// Intermediate returns a fresh intermediate CA named cn signed by ca:
// pathLen 0, keyCertSign and cRLSign, valid from an hour ago for five years.
func (ca *CA) Intermediate(t testing.TB, cn string) *CA {
	t.Helper()
	key := NewKey(t)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          RandomSerial(t),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(5, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		SubjectKeyId:          keyID(t, key.Public()),
	}
	return sign(t, tmpl, ca.Cert, key, ca.Key)
}

// CRL returns a PEM CRL of ca numbered number, issued at now and valid for
// ttl, that lists the serials of revoked (reason unspecified, revoked at
// now).
func (ca *CA) CRL(t testing.TB, number int64, now time.Time, ttl time.Duration, revoked ...*x509.Certificate) []byte {
	t.Helper()
	entries := make([]x509.RevocationListEntry, 0, len(revoked))
	for _, c := range revoked {
		entries = append(entries, x509.RevocationListEntry{SerialNumber: c.SerialNumber, RevocationTime: now})
	}
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number:                    big.NewInt(number),
		ThisUpdate:                now,
		NextUpdate:                now.Add(ttl),
		RevokedCertificateEntries: entries,
	}, ca.Cert, ca.Key)
	if err != nil {
		t.Fatalf("testca: creating CRL: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der})
}

// sign signs tmpl for key with parentKey as parent and returns the CA.
func sign(t testing.TB, tmpl, parent *x509.Certificate, key, parentKey crypto.Signer) *CA {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		t.Fatalf("testca: creating CA certificate %q: %v", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testca: parsing CA certificate: %v", err)
	}
	return &CA{Cert: cert, Key: key}
}
