package acme

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"net"
	"net/netip"
	"testing"
)

func csrDER(t *testing.T, key crypto.Signer, tmpl *x509.CertificateRequest) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// badCSRs are finalize CSRs for an order of localhost and 127.0.0.1
// that the server must refuse.
func badCSRs(t *testing.T) map[string][]byte {
	t.Helper()
	both := func() *x509.CertificateRequest {
		return &x509.CertificateRequest{DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	}
	extra := both()
	extra.DNSNames = append(extra.DNSNames, "other.example.com")
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	caTrue := both()
	bc, _ := asn1.Marshal(struct {
		IsCA bool `asn1:"optional"`
	}{true})
	caTrue.ExtraExtensions = []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 19}, Critical: true, Value: bc}}
	return map[string][]byte{
		"a name not in the order":  csrDER(t, newKey(t), extra),
		"a name missing":           csrDER(t, newKey(t), &x509.CertificateRequest{DNSNames: []string{"localhost"}}),
		"an RSA key of 1024 bits":  csrDER(t, weak, both()),
		"basicConstraints CA:TRUE": csrDER(t, newKey(t), caTrue),
	}
}

func mustPrefixes(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range s {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}
