package revoke_test

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"minica/internal/testca"
	"minica/revoke"
)

// TestParseCRLRefusesIssuerWithoutCRLSign refuses a CRL checked against a
// CA certificate whose key usage lacks cRLSign, even when its key signed
// the CRL (RFC 5280 section 4.2.1.3), and accepts it from a certificate of
// the same key that has cRLSign, or no key usage at all.
func TestParseCRLRefusesIssuerWithoutCRLSign(t *testing.T) {
	ca := testca.NewRoot(t, "CRLSign Root")
	crl := ca.CRL(t, 1, time.Now(), time.Hour)
	reissue := func(ku x509.KeyUsage) *x509.Certificate {
		tmpl := *ca.Cert
		tmpl.KeyUsage = ku
		der, err := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, ca.Key.Public(), ca.Key)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if _, err := revoke.ParseCRL(crl, ca.Cert); err != nil {
		t.Fatalf("ParseCRL(cRLSign) = %v", err)
	}
	if _, err := revoke.ParseCRL(crl, reissue(0)); err != nil {
		t.Fatalf("ParseCRL(no key usage) = %v", err)
	}
	_, err := revoke.ParseCRL(crl, reissue(x509.KeyUsageCertSign))
	if !errors.Is(err, revoke.ErrWrongIssuer) || !strings.Contains(err.Error(), `CA "CN=CRLSign Root" may not sign CRLs: its key usage lacks cRLSign`) {
		t.Fatalf("ParseCRL(keyCertSign only) = %v", err)
	}
}

// TestParseCRLRefusesCriticalCRLNumber refuses a CRL whose CRL number is
// marked critical: RFC 5280 section 5.2.3 makes it non-critical.
func TestParseCRLRefusesCriticalCRLNumber(t *testing.T) {
	ca := testca.NewRoot(t, "Critical Root")
	now := time.Now().UTC().Truncate(time.Second)
	for _, critical := range []bool{false, true} {
		crl := signedCRL(t, ca, func(b *cryptobyte.Builder) {
			b.AddASN1Int64(1) // v2
			b.AddBytes([]byte{0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02})
			b.AddBytes(ca.Cert.RawSubject)
			b.AddASN1UTCTime(now)
			b.AddASN1UTCTime(now.Add(time.Hour))
			b.AddASN1(cbasn1.Tag(0).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
					b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
						b.AddASN1ObjectIdentifier(asn1.ObjectIdentifier{2, 5, 29, 20})
						if critical {
							b.AddASN1Boolean(true)
						}
						b.AddASN1(cbasn1.OCTET_STRING, func(b *cryptobyte.Builder) { b.AddASN1Int64(4) })
					})
				})
			})
		})
		_, err := revoke.ParseCRL(crl, ca.Cert)
		switch {
		case !critical && err != nil:
			t.Errorf("ParseCRL(non-critical CRL number) = %v", err)
		case critical && (!errors.Is(err, revoke.ErrMalformed) || !strings.Contains(err.Error(), "CRL number marked critical")):
			t.Errorf("ParseCRL(critical CRL number) = %v; want ErrMalformed naming it", err)
		}
	}
}
