package certlint_test

import (
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"minica/internal/certlint"
	"minica/internal/testca"
)

// recorder is a testing.TB that collects Errorf calls instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestCertificateCleanCA(t *testing.T) {
	ca := testca.New(t, "Certlint Root")
	certlint.Certificate(t, ca.Cert.Raw)
}

func TestCertificateReportsFindings(t *testing.T) {
	ca := testca.New(t, "Certlint Root")
	// keyCertSign on a certificate that is not a CA breaks RFC 5280 4.2.1.3.
	leaf, _ := ca.Leaf(t, &x509.Certificate{
		Subject:      pkix.Name{CommonName: "bad leaf"},
		DNSNames:     []string{"bad.example"},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		SubjectKeyId: []byte{1, 2, 3, 4},
	})
	rec := &recorder{TB: t}
	certlint.Certificate(rec, leaf.Raw)
	want := "zlint certificate: e_ext_key_usage_cert_sign_without_ca: error"
	if !containsPrefix(rec.errs, want) {
		t.Errorf("Certificate() reported %q; want an entry starting with %q", rec.errs, want)
	}
}

func TestCertificateReportsParseError(t *testing.T) {
	rec := &recorder{TB: t}
	certlint.Certificate(rec, []byte("not DER"))
	if len(rec.errs) != 1 || !strings.HasPrefix(rec.errs[0], "zlint certificate: parsing certificate for zlint: ") {
		t.Errorf("Certificate() reported %q; want one parse error", rec.errs)
	}
}

func TestRevocationListClean(t *testing.T) {
	ca := testca.New(t, "Certlint Root")
	now := time.Now()
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number:     big.NewInt(1),
		ThisUpdate: now,
		NextUpdate: now.Add(24 * time.Hour),
		RevokedCertificateEntries: []x509.RevocationListEntry{
			{SerialNumber: big.NewInt(42), RevocationTime: now.Add(-time.Hour), ReasonCode: 1},
		},
	}, ca.Cert, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	certlint.RevocationList(t, der)
}

func TestRevocationListReportsFindings(t *testing.T) {
	ca := testca.New(t, "Certlint Root")
	der := crlWithoutExtensions(t, ca)
	got, err := certlint.RevocationListFindings(der)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"e_crl_has_authority_key_identifier: error",
		"e_crl_missing_crl_number: error",
	} {
		if !containsPrefix(got, want) {
			t.Errorf("RevocationListFindings() = %q; want an entry starting with %q", got, want)
		}
	}
	rec := &recorder{TB: t}
	certlint.RevocationList(rec, der)
	if len(rec.errs) != len(got) {
		t.Errorf("RevocationList() reported %d findings; want %d", len(rec.errs), len(got))
	}
}

func containsPrefix(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// crlWithoutExtensions signs a v2 CRL with no crlExtensions at all, so it
// lacks the authority key identifier and CRL number RFC 5280 5.2 requires.
func crlWithoutExtensions(t *testing.T, ca *testca.CA) []byte {
	t.Helper()
	algo := pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 2}}
	algoDER, err := asn1.Marshal(algo)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	var tbs cryptobyte.Builder
	tbs.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1Int64(1)
		b.AddBytes(algoDER)
		b.AddBytes(ca.Cert.RawSubject)
		b.AddASN1UTCTime(now)
		b.AddASN1UTCTime(now.Add(time.Hour))
	})
	tbsDER := tbs.BytesOrPanic()
	digest := sha256.Sum256(tbsDER)
	sig, err := ca.Key.Sign(rand.Reader, digest[:], crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	var crl cryptobyte.Builder
	crl.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddBytes(tbsDER)
		b.AddBytes(algoDER)
		b.AddASN1BitString(sig)
	})
	return crl.BytesOrPanic()
}
