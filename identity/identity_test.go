package identity

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/internal/testca"
	"minica/internal/testdn"
)

// opensslSubject returns what `openssl x509 -subject -nameopt RFC2253` prints.
func opensslSubject(t *testing.T, cert *x509.Certificate) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("openssl", "x509", "-in", path, "-noout", "-subject", "-nameopt", "RFC2253").Output()
	if err != nil {
		t.Fatalf("running openssl (it must be installed for this test): %v", err)
	}
	return strings.TrimSuffix(strings.TrimPrefix(string(out), "subject="), "\n")
}

func TestDNMatchesOpenSSL(t *testing.T) {
	ca := testca.New(t, "Test CA")
	tests := []struct {
		name string
		rdns []testdn.RDNSET
		want string
	}{
		{name: "utf8 cn", rdns: []testdn.RDNSET{testdn.One(testdn.CN, testdn.UTF8("Zoë Müller 日本"))},
			want: `CN=Zo\C3\AB M\C3\BCller \E6\97\A5\E6\9C\AC`},
		{name: "email in dn", rdns: []testdn.RDNSET{testdn.One(testdn.C, testdn.Printable("DE")), testdn.One(testdn.CN, testdn.UTF8("alice")), testdn.One(testdn.EmailAddress, testdn.IA5("alice@example.com"))},
			want: `emailAddress=alice@example.com,CN=alice,C=DE`},
		{name: "comma and plus", rdns: []testdn.RDNSET{testdn.One(testdn.O, testdn.UTF8("Acme, Inc.")), testdn.One(testdn.CN, testdn.UTF8("R+D"))},
			want: `CN=R\+D,O=Acme\, Inc.`},
		{name: "multi-valued rdn", rdns: []testdn.RDNSET{testdn.One(testdn.O, testdn.UTF8("Acme")), {{Type: testdn.CN, Value: testdn.UTF8("bob")}, {Type: testdn.OU, Value: testdn.UTF8("Ops")}}},
			want: `OU=Ops+CN=bob,O=Acme`},
		{name: "specials", rdns: []testdn.RDNSET{testdn.One(testdn.CN, testdn.UTF8(`#a "q" <x>;\ b#`))},
			want: `CN=\#a \"q\" \<x\>\;\\ b#`},
		{name: "leading space", rdns: []testdn.RDNSET{testdn.One(testdn.CN, testdn.UTF8(" x = y"))},
			want: `CN=\ x = y`},
		{name: "control characters", rdns: []testdn.RDNSET{testdn.One(testdn.CN, testdn.UTF8("a\x01b\nc\x7fd"))},
			want: `CN=a\01b\0Ac\7Fd`},
		{name: "bmp string", rdns: []testdn.RDNSET{testdn.One(testdn.CN, testdn.BMP("Ωmega"))},
			want: `CN=\CE\A9mega`},
		{name: "unknown attribute", rdns: []testdn.RDNSET{testdn.One(testdn.Unknown, testdn.UTF8("abc")), testdn.One(testdn.CN, testdn.UTF8("x"))},
			want: `CN=x,1.2.3.4=#0C03616263`},
		{name: "attributes openssl names", rdns: []testdn.RDNSET{
			testdn.One(asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}, testdn.IA5("com")),
			testdn.One(asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}, testdn.UTF8("bob")),
			testdn.One(asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 3}, testdn.IA5("bob@example.com")),
			testdn.One(asn1.ObjectIdentifier{2, 5, 4, 72}, testdn.UTF8("admin")),
		}, want: `role=admin,mail=bob@example.com,UID=bob,DC=com`},
		{name: "lone hash", rdns: []testdn.RDNSET{testdn.One(testdn.O, testdn.UTF8("#")), testdn.One(testdn.OU, testdn.UTF8("#x")), testdn.One(testdn.CN, testdn.UTF8(" "))},
			want: `CN=\ ,OU=\#x,O=#`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert, _ := ca.Leaf(t, &x509.Certificate{RawSubject: testdn.Name(t, tt.rdns...)})
			id, err := New(cert, nil)
			if err != nil {
				t.Fatalf("New() error = %v", err)
			}
			if id.DN != tt.want {
				t.Errorf("DN = %q; want %q", id.DN, tt.want)
			}
			if got := opensslSubject(t, cert); got != id.DN {
				t.Errorf("DN = %q; openssl prints %q", id.DN, got)
			}
		})
	}
}

func TestDNTrailingSpace(t *testing.T) {
	ca := testca.New(t, "Test CA")
	cert, _ := ca.Leaf(t, &x509.Certificate{RawSubject: testdn.Name(t, testdn.One(testdn.CN, testdn.UTF8("x ")))})
	id, err := New(cert, nil)
	if err != nil {
		t.Fatal(err)
	}
	// openssl prints `CN=x\ `; HTTP would strip the trailing space.
	if got, want := opensslSubject(t, cert), `CN=x\ `; got != want {
		t.Errorf("openssl prints %q; want %q", got, want)
	}
	if want := `CN=x\20`; id.DN != want {
		t.Errorf("DN = %q; want %q", id.DN, want)
	}
}

func TestNewIdentityFields(t *testing.T) {
	ca := testca.New(t, "Test CA")
	u, _ := url.Parse("spiffe://example.com/alice")
	cert, _ := ca.Leaf(t, &x509.Certificate{
		SerialNumber:   big.NewInt(0x0abc),
		RawSubject:     testdn.Name(t, testdn.One(testdn.O, testdn.UTF8("Acme")), testdn.One(testdn.OU, testdn.UTF8("Ops")), testdn.One(testdn.OU, testdn.UTF8("Dev")), testdn.One(testdn.CN, testdn.UTF8("alice")), testdn.One(testdn.EmailAddress, testdn.IA5("dn@example.com"))),
		EmailAddresses: []string{"san@example.com", "other@example.com"},
		URIs:           []*url.URL{u},
		DNSNames:       []string{"alice.example.com"},
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	id, err := New(cert, []*x509.Certificate{cert, ca.Cert})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ name, got, want string }{
		{"CN", id.CN, "alice"},
		{"Email", id.Email, "san@example.com"},
		{"DNEmail", id.DNEmail, "dn@example.com"},
		{"OU", strings.Join(id.OU, "|"), "Ops|Dev"},
		{"O", strings.Join(id.O, "|"), "Acme"},
		{"SerialHex", id.SerialHex, "0ABC"},
		{"URIs", strings.Join(id.URIs, "|"), "spiffe://example.com/alice"},
		{"IssuerDN", id.IssuerDN, "CN=Test CA"},
		{"Verify", id.Verify, "SUCCESS"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q; want %q", c.name, c.got, c.want)
		}
	}
	if len(id.Chain) != 1 || id.Chain[0] != ca.Cert {
		t.Errorf("Chain = %v; want the CA only", id.Chain)
	}
	// Without a rfc822Name SAN the DN emailAddress is the email.
	cert2, _ := ca.Leaf(t, &x509.Certificate{RawSubject: testdn.Name(t, testdn.One(testdn.CN, testdn.UTF8("bob")), testdn.One(testdn.EmailAddress, testdn.IA5("bob@example.com")))})
	id2, err := New(cert2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id2.Email != "bob@example.com" {
		t.Errorf("Email = %q; want the DN emailAddress", id2.Email)
	}
}

func TestSerialHex(t *testing.T) {
	tests := []struct {
		n    *big.Int
		want string
	}{
		{big.NewInt(0), "00"},
		{big.NewInt(1), "01"},
		{big.NewInt(0xabc), "0ABC"},
		{big.NewInt(-255), "-FF"},
		{new(big.Int).Lsh(big.NewInt(1), 127), "80000000000000000000000000000000"},
	}
	for _, tt := range tests {
		if got := SerialHex(tt.n); got != tt.want {
			t.Errorf("SerialHex(%v) = %q; want %q", tt.n, got, tt.want)
		}
	}
}

func TestNewIdentityErrors(t *testing.T) {
	if _, err := New(nil, nil); err == nil || err.Error() != "no certificate" {
		t.Errorf("New(nil) error = %v; want %q", err, "no certificate")
	}
	bad := &x509.Certificate{RawSubject: []byte{0x30, 0x03, 0x31, 0x01}}
	if _, err := New(bad, nil); err == nil || !strings.HasPrefix(err.Error(), "parsing subject: ") {
		t.Errorf("New(bad subject) error = %v; want parsing subject", err)
	}
}

func TestDaysLeft(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	day := 24 * time.Hour
	tests := []struct {
		left time.Duration
		want int
	}{
		{0, 0},
		{time.Nanosecond, 0},
		{day - time.Nanosecond, 0}, // the last day
		{day, 1},
		{2*day - time.Second, 1},
		{30*day + time.Hour, 30},
		{-time.Nanosecond, -1},
		{-day, -1},
		{-day - time.Nanosecond, -2},
		{3650 * day, 3650},
	}
	for _, tt := range tests {
		if got := DaysLeft(now.Add(tt.left), now); got != tt.want {
			t.Errorf("DaysLeft(now%+v) = %d; want %d", tt.left, got, tt.want)
		}
	}
}
