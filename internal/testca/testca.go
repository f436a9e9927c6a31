// Package testca builds throw-away certificate authorities and leaf
// certificates in memory for tests. It never touches the disk.
package testca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"
)

// CA is an in-memory root: an ECDSA P-256 key and a self-signed certificate
// with keyCertSign, cRLSign and a subject key identifier.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// New returns a fresh root CA named cn, valid from an hour ago for ten years.
func New(t testing.TB, cn string) *CA {
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
		MaxPathLenZero:        true,
		SubjectKeyId:          keyID(t, key.Public()),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatalf("testca: creating CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testca: parsing CA certificate: %v", err)
	}
	return &CA{Cert: cert, Key: key}
}

// Leaf signs tmpl with the CA for a fresh ECDSA P-256 key and returns the
// parsed certificate and its key. A nil SerialNumber gets a random one; zero
// NotBefore/NotAfter become an hour ago and a day from now.
func (ca *CA) Leaf(t testing.TB, tmpl *x509.Certificate) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	key := NewKey(t)
	if tmpl.SerialNumber == nil {
		tmpl.SerialNumber = RandomSerial(t)
	}
	if tmpl.NotBefore.IsZero() {
		tmpl.NotBefore = time.Now().Add(-time.Hour)
	}
	if tmpl.NotAfter.IsZero() {
		tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		t.Fatalf("testca: creating leaf certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testca: parsing leaf certificate: %v", err)
	}
	return cert, key
}

// Client issues a client certificate (EKU clientAuth) with the given CN.
func (ca *CA) Client(t testing.TB, cn string) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	return ca.Leaf(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// Server issues a server certificate (EKU serverAuth) for the DNS name host
// and the IP 127.0.0.1.
func (ca *CA) Server(t testing.TB, host string) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	return ca.Leaf(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: host},
		DNSNames:    []string{host},
		IPAddresses: loopback,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// PEM returns the CA certificate PEM-encoded.
func (ca *CA) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// NewKey returns a fresh ECDSA P-256 key.
func NewKey(t testing.TB) crypto.Signer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testca: generating key: %v", err)
	}
	return key
}

// RandomSerial returns a positive 128-bit random serial number.
func RandomSerial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		t.Fatalf("testca: serial: %v", err)
	}
	return n.Add(n, big.NewInt(1))
}

var loopback = []net.IP{net.IPv4(127, 0, 0, 1)}

func keyID(t testing.TB, pub crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatalf("testca: marshaling public key: %v", err)
	}
	sum := sha1.Sum(der)
	return sum[:]
}
