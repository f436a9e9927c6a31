package ca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"minica/internal/certlint"
)

func cidr(t testing.TB, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func ipNets(nets []*net.IPNet) string {
	s := make([]string, len(nets))
	for i, n := range nets {
		s[i] = n.String()
	}
	return strings.Join(s, " ")
}

// Any constraint given at init constrains every name type: the types
// without a permitted subtree are excluded in the CA certificate itself.
func TestInitExcludesUnpermittedNameTypes(t *testing.T) {
	tests := []struct {
		name string
		opts InitOptions
		// permitted and excluded subtrees, per type: DNS, email, URI, IP
		want [4][2]string
	}{
		{"unconstrained", InitOptions{}, [4][2]string{}},
		{"DNS only", InitOptions{PermittedDNS: []string{"example.com"}}, [4][2]string{
			{"example.com", ""}, {"none.invalid", "none.invalid"}, {"none.invalid", "none.invalid"}, {"", "0.0.0.0/0 ::/0"}}},
		{"IP only", InitOptions{PermittedIPs: []*net.IPNet{cidr(t, "10.0.0.0/8")}}, [4][2]string{
			{"none.invalid", "none.invalid"}, {"none.invalid", "none.invalid"}, {"none.invalid", "none.invalid"}, {"10.0.0.0/8", ""}}},
		{"email and URI", InitOptions{PermittedEmails: []string{"example.com", "boss@example.org"}, PermittedURIs: []string{".example.com"}}, [4][2]string{
			{"none.invalid", "none.invalid"}, {"example.com boss@example.org", ""}, {".example.com", ""}, {"", "0.0.0.0/0 ::/0"}}},
		{"every type", InitOptions{PermittedDNS: []string{"a.example"}, PermittedEmails: []string{"b.example"}, PermittedURIs: []string{"c.example"}, PermittedIPs: []*net.IPNet{cidr(t, "0.0.0.0/0"), cidr(t, "::/0")}}, [4][2]string{
			{"a.example", ""}, {"b.example", ""}, {"c.example", ""}, {"0.0.0.0/0 ::/0", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestCA(t, tt.opts)
			cert := c.Cert
			got := [4][2]string{
				{strings.Join(cert.PermittedDNSDomains, " "), strings.Join(cert.ExcludedDNSDomains, " ")},
				{strings.Join(cert.PermittedEmailAddresses, " "), strings.Join(cert.ExcludedEmailAddresses, " ")},
				{strings.Join(cert.PermittedURIDomains, " "), strings.Join(cert.ExcludedURIDomains, " ")},
				{ipNets(cert.PermittedIPRanges), ipNets(cert.ExcludedIPRanges)},
			}
			if got != tt.want {
				t.Errorf("name constraints (permitted, excluded) for DNS, email, URI, IP = %q; want %q", got, tt.want)
			}
			if constrained := got != [4][2]string{}; constrained && !cert.PermittedDNSDomainsCritical {
				t.Error("name constraints are not critical")
			}
			certlint.Certificate(t, cert.Raw)
		})
	}
}

func TestInitRejectsBadConstraints(t *testing.T) {
	tests := []struct {
		name    string
		opts    InitOptions
		wantErr string
	}{
		{"DNS wildcard", InitOptions{PermittedDNS: []string{"*.example.com"}}, `permitted DNS domain "*.example.com": want a domain such as example.com, without a wildcard`},
		{"bad DNS", InitOptions{PermittedDNS: []string{"exa mple.com"}}, `permitted DNS domain: invalid DNS name "exa mple.com"`},
		{"bad email", InitOptions{PermittedEmails: []string{"x@y@z"}}, `invalid email "x@y@z"`},
		{"bad URI domain", InitOptions{PermittedURIs: []string{"spiffe://example.com"}}, `permitted URI domain: invalid DNS name "spiffe://example.com"`},
		{"URI wildcard", InitOptions{PermittedURIs: []string{"*.example.com"}}, `permitted URI domain "*.example.com": want a domain such as example.com, without a wildcard`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.CommonName = "Root"
			dir := t.TempDir() + "/ca"
			_, err := Init(dir, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Init() error = %v; want containing %q", err, tt.wantErr)
			}
		})
	}
}

// handSigned is a leaf signed with the CA key directly, past minica's own
// checks, as a leaked CA key could sign one.
type handSigned struct {
	name   string
	leaf   x509.Certificate
	wantOK bool
}

// handSignedCAs are constrained CAs and leaves to sign with their keys.
func handSignedCAs(t testing.TB) []struct {
	name   string
	opts   InitOptions
	leaves []handSigned
} {
	return []struct {
		name   string
		opts   InitOptions
		leaves []handSigned
	}{
		{"DNS only", InitOptions{PermittedDNS: []string{"example.com"}}, handSignedLeaves(t)},
		{"email only", InitOptions{PermittedEmails: []string{"example.com"}}, []handSigned{
			// A client certificate: GnuTLS checks the common name of one
			// that may serve TLS and has no DNS name against the DNS
			// constraints.
			{"email inside", x509.Certificate{EmailAddresses: []string{"alice@example.com"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true},
			{"DNS", x509.Certificate{DNSNames: []string{"www.example.com"}}, false},
			{"DNS in the marker domain", x509.Certificate{DNSNames: []string{"x.none.invalid"}}, false},
		}},
	}
}

// handSignedLeaves are leaves for a CA that permits DNS example.com only.
func handSignedLeaves(t testing.TB) []handSigned {
	uri := func(s string) []*url.URL {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return []*url.URL{u}
	}
	return []handSigned{
		{"DNS inside", x509.Certificate{DNSNames: []string{"www.example.com"}}, true},
		{"DNS outside", x509.Certificate{DNSNames: []string{"www.example.org"}}, false},
		{"DNS in the marker domain", x509.Certificate{DNSNames: []string{"x.none.invalid"}}, false},
		{"IPv4 only", x509.Certificate{IPAddresses: []net.IP{net.ParseIP("1.1.1.1")}}, false},
		{"IPv6 only", x509.Certificate{IPAddresses: []net.IP{net.ParseIP("2001:db8::1")}}, false},
		{"DNS inside with an IP", x509.Certificate{DNSNames: []string{"www.example.com"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}}, false},
		{"email", x509.Certificate{EmailAddresses: []string{"alice@example.com"}}, false},
		{"email in the marker domain", x509.Certificate{EmailAddresses: []string{"alice@none.invalid"}}, false},
		{"URI", x509.Certificate{URIs: uri("spiffe://example.com/svc")}, false},
		{"URI in the marker domain", x509.Certificate{URIs: uri("https://none.invalid/")}, false},
	}
}

// signLeaf signs a copy of tmpl with the CA key, bypassing Issue; its
// extended key usages default to serverAuth and clientAuth.
func signLeaf(t testing.TB, c *CA, signer crypto.Signer, tmpl x509.Certificate) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := randomSerial()
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = serial
	tmpl.Subject = pkix.Name{CommonName: "leaf"}
	tmpl.NotBefore, tmpl.NotAfter = c.Cert.NotBefore, c.Cert.NotBefore.Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	if tmpl.ExtKeyUsage == nil {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, c.Cert, key.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// Go's verifier refuses a hand-signed leaf with a name of a type that a
// constrained CA does not permit; OpenSSL does too (interop_test.go).
func TestConstraintsBindHandSignedLeaves(t *testing.T) {
	for _, ca := range handSignedCAs(t) {
		c, signer := newTestCA(t, ca.opts)
		roots := x509.NewCertPool()
		roots.AddCert(c.Cert)
		for _, tt := range ca.leaves {
			t.Run(ca.name+"/"+tt.name, func(t *testing.T) {
				leaf := signLeaf(t, c, signer, tt.leaf)
				_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: leaf.NotBefore, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
				if ok := err == nil; ok != tt.wantOK {
					t.Errorf("Verify() = %v; want ok = %v", err, tt.wantOK)
				}
				if !tt.wantOK && err != nil && !strings.Contains(err.Error(), "not authorized to sign for this name") {
					t.Errorf("Verify() = %v; want a name constraint error", err)
				}
			})
		}
	}
}

// Issue refuses every name that a verifier would refuse under the CA's
// constraints, and the common name that OpenSSL reads as a DNS name.
func TestIssueRefusesNamesOutsideConstraints(t *testing.T) {
	dnsOnly, dnsSigner := newTestCA(t, InitOptions{PermittedDNS: []string{"example.com"}})
	every, everySigner := newTestCA(t, InitOptions{
		PermittedDNS: []string{"example.com"}, PermittedEmails: []string{"example.com"},
		PermittedURIs: []string{"example.com", ".svc.example.com"}, PermittedIPs: []*net.IPNet{cidr(t, "10.0.0.0/8")},
	})
	tests := []struct {
		name    string
		every   bool // under the CA that permits every type, else DNS only
		req     Request
		wantErr string // "" for success
	}{
		{"DNS inside", false, Request{Name: "www.example.com", Profile: Server}, ""},
		{"client without names", false, Request{Name: "alice", Profile: Client}, ""},
		{"IP only", false, Request{Name: "db1", Profile: Server, IPs: []net.IP{net.ParseIP("1.1.1.1")}},
			"IP address 1.1.1.1 is outside the CA's name constraints, which permit no IP addresses"},
		{"IPv6", false, Request{Name: "db2", Profile: Server, DNSNames: []string{"db.example.com"}, IPs: []net.IP{net.ParseIP("::1")}},
			"IP address ::1 is outside the CA's name constraints, which permit no IP addresses"},
		{"email", false, Request{Name: "alice2", Profile: Client, Emails: []string{"alice@example.com"}},
			`email "alice@example.com" is outside the CA's name constraints, which permit no emails`},
		{"URI", false, Request{Name: "svc1", Profile: Client, URIs: []string{"spiffe://example.com/svc"}},
			`URI "spiffe://example.com/svc" is outside the CA's name constraints, which permit no URIs`},
		{"DNS in the marker domain", false, Request{Name: "x.none.invalid", Profile: Server},
			`DNS name "x.none.invalid" is outside the CA's permitted DNS domains (example.com)`},
		{"CN read as a DNS name", false, Request{Name: "alice.smith", Profile: Client},
			`common name "alice.smith" is outside the CA's permitted DNS domains (example.com): OpenSSL checks a common name that looks like a host name against the DNS constraints when the certificate has no DNS name; pass a common name without a dot`},
		{"CN inside as a DNS name", false, Request{Name: "app.example.com", Profile: Client}, ""},
		{"CN with a DNS SAN", false, Request{Name: "web", Profile: Server, CommonName: "web.example.org", DNSNames: []string{"web.example.com"}}, ""},

		{"every type inside", true, Request{Name: "all", Profile: Client, DNSNames: []string{"a.example.com"}, IPs: []net.IP{net.ParseIP("10.1.2.3")},
			Emails: []string{"a@example.com"}, EmailInSubject: true, URIs: []string{"spiffe://example.com/a", "https://x.svc.example.com/"}}, ""},
		{"IP outside", true, Request{Name: "db3", Profile: Server, IPs: []net.IP{net.ParseIP("192.168.1.1")}},
			"IP address 192.168.1.1 is outside the CA's permitted IP ranges (10.0.0.0/8)"},
		{"IPv6 outside an IPv4 range", true, Request{Name: "db4", Profile: Server, IPs: []net.IP{net.ParseIP("::1")}},
			"IP address ::1 is outside the CA's permitted IP ranges (10.0.0.0/8)"},
		{"email outside", true, Request{Name: "eve", Profile: Client, Emails: []string{"eve@mail.example.com"}},
			`email "eve@mail.example.com" is outside the CA's permitted email domains (example.com)`},
		// OpenSSL matches a URI domain without a leading dot exactly.
		{"URI subdomain", true, Request{Name: "svc2", Profile: Client, URIs: []string{"spiffe://a.example.com/svc"}},
			`URI "spiffe://a.example.com/svc" is outside the CA's permitted URI domains (example.com, .svc.example.com)`},
		{"URI without a host", true, Request{Name: "svc3", Profile: Client, URIs: []string{"urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66"}},
			`URI "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66" has no host name to check against the CA's URI constraints`},
		{"URI with an IP host", true, Request{Name: "svc4", Profile: Client, URIs: []string{"https://10.0.0.1/"}},
			`URI "https://10.0.0.1/" has no host name to check against the CA's URI constraints`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, signer := dnsOnly, dnsSigner
			if tt.every {
				c, signer = every, everySigner
			}
			before := countRecords(t, c)
			is, err := c.Issue(signer, tt.req)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Issue() = %v; want success", err)
				}
				certlint.Certificate(t, is.Cert.Raw)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Issue() error = %v; want containing %q", err, tt.wantErr)
			}
			if whole := strings.Contains(tt.wantErr, "which permit no"); errors.Is(err, ErrTypeNotPermitted) != whole {
				t.Errorf("errors.Is(%v, ErrTypeNotPermitted) = %v; want %v", err, !whole, whole)
			}
			if after := countRecords(t, c); after != before {
				t.Errorf("%d records after a refused request; want %d", after, before)
			}
		})
	}
}

func countRecords(t *testing.T, c *CA) int {
	t.Helper()
	n := 0
	for _, err := range c.Records() {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// A server certificate without DNS names loses its common name under a CA
// that constrains DNS names, unless the name is within them: GnuTLS checks
// such a certificate's common name as a DNS name, and OpenSSL one that
// looks like a host name.
func TestIPOnlyServerCommonName(t *testing.T) {
	ip := []net.IP{net.ParseIP("10.0.0.5")}
	tests := []struct {
		name   string
		opts   InitOptions
		req    Request
		wantCN string
	}{
		{"IP only CA", InitOptions{PermittedIPs: []*net.IPNet{cidr(t, "10.0.0.0/8")}}, Request{Name: "db", Profile: Server, IPs: ip}, ""},
		{"name outside the DNS domains", InitOptions{PermittedDNS: []string{"example.com"}, PermittedIPs: []*net.IPNet{cidr(t, "10.0.0.0/8")}},
			Request{Name: "db.internal", Profile: Server, IPs: ip}, ""},
		{"name inside the DNS domains", InitOptions{PermittedDNS: []string{"example.com"}, PermittedIPs: []*net.IPNet{cidr(t, "10.0.0.0/8")}},
			Request{Name: "db.example.com", Profile: Server, IPs: ip}, "db.example.com"},
		{"with organization", InitOptions{PermittedIPs: []*net.IPNet{cidr(t, "10.0.0.0/8")}}, Request{Name: "db", Profile: Server, IPs: ip, Organization: []string{"Acme"}}, ""},
		{"unconstrained", InitOptions{}, Request{Name: "db", Profile: Server, IPs: ip}, "db"},
		{"with a DNS name", InitOptions{PermittedDNS: []string{"example.com"}}, Request{Name: "db", Profile: Server, DNSNames: []string{"db.example.com"}}, "db"},
		{"client", InitOptions{PermittedIPs: []*net.IPNet{cidr(t, "10.0.0.0/8")}}, Request{Name: "alice", Profile: Client}, "alice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, signer := newTestCA(t, tt.opts)
			is, err := c.Issue(signer, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			certlint.Certificate(t, is.Cert.Raw)
			if got := is.Cert.Subject.CommonName; got != tt.wantCN {
				t.Errorf("common name %q; want %q", got, tt.wantCN)
			}
			if got, want := is.Record.Name, tt.req.Name; got != want {
				t.Errorf("record name %q; want %q", got, want)
			}
			if len(is.Cert.Subject.Names) == 0 && !sanCritical(is.Cert) {
				t.Error("empty subject without a critical subjectAltName")
			}
			roots := x509.NewCertPool()
			roots.AddCert(c.Cert)
			if _, err := is.Cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: is.Cert.NotBefore, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
				t.Errorf("Verify() = %v", err)
			}
		})
	}
}

func sanCritical(cert *x509.Certificate) bool {
	for _, e := range cert.Extensions {
		if e.Id.Equal([]int{2, 5, 29, 17}) {
			return e.Critical
		}
	}
	return false
}
