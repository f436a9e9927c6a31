//go:build interop

package hiertest

import (
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// peerLimits are the known gaps of the installed peers, by case and peer: a
// verdict the peer gets wrong, with the reason. The test fails when the peer
// gets it right after all (the gap closed, so this list and docs/security.md
// must shrink), as it does on any other wrong verdict.
var peerLimits = map[string]map[string]string{
	"inside-uri": {"gnutls": "GnuTLS 3.7.9 refuses every URI SAN under a CA with an excluded URI subtree, " +
		"even one inside the permitted subtree: it fails closed, never open"},
}

// TestNameConstraintsBindHandSignedLeaves builds, with crypto/x509 alone, a
// root, an intermediate constrained to permitted and excluded DNS domains,
// email domains, IP ranges and URI domains, and leaves signed by hand with
// the intermediate's key: one inside every constraint, and one per name type
// outside a permitted subtree or inside an excluded one. Go's verifier,
// OpenSSL, GnuTLS and NSS must each accept the inside leaf and refuse every
// other one because of a name constraint (NSS through `certutil -V`, its
// classic verifier, which names the reason): stealing the intermediate's key
// does not give the power to certify names outside its domain.
func TestNameConstraintsBindHandSignedLeaves(t *testing.T) {
	for _, tool := range []string{"openssl", "certtool", "certutil"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is required (Debian packages openssl, gnutls-bin, libnss3-tools)", tool)
		}
	}
	now := time.Now()
	dir := t.TempDir()
	root := sign(t, caTemplate("Constraints Test Root", 1, now), nil)
	it := caTemplate("Constraints Test Issuing CA", 0, now)
	it.PermittedDNSDomainsCritical = true
	it.PermittedDNSDomains = []string{"example.com"}
	it.ExcludedDNSDomains = []string{"secret.example.com"}
	it.PermittedEmailAddresses = []string{"example.com"}
	it.ExcludedEmailAddresses = []string{"secret.example.com"}
	it.PermittedIPRanges = []*net.IPNet{mustCIDR(t, "10.0.0.0/8")}
	it.ExcludedIPRanges = []*net.IPNet{mustCIDR(t, "10.1.0.0/16")}
	it.PermittedURIDomains = []string{".example.com"}
	it.ExcludedURIDomains = []string{"secret.example.com"}
	inter := sign(t, it, root)
	rootFile := writePEM(t, dir, "root.pem", root.cert)
	interFile := writePEM(t, dir, "intermediate.pem", inter.cert)
	nssDB := filepath.Join(dir, "nss")
	run(t, "mkdir", nssDB)
	run(t, "certutil", "-N", "-d", "sql:"+nssDB, "--empty-password")
	run(t, "certutil", "-A", "-d", "sql:"+nssDB, "-n", "root", "-t", "CT,C,C", "-a", "-i", rootFile)
	run(t, "certutil", "-A", "-d", "sql:"+nssDB, "-n", "intermediate", "-t", ",,", "-a", "-i", interFile)

	tests := []struct {
		name   string
		dns    string
		email  string
		ip     string
		uri    string
		wantOK bool
	}{
		{name: "inside", dns: "app.example.com", email: "simon@example.com", ip: "10.2.3.4", wantOK: true},
		{name: "inside-uri", dns: "app.example.com", uri: "https://app.example.com/simon", wantOK: true},
		{name: "dns-not-permitted", dns: "app.example.net"},
		{name: "dns-excluded", dns: "db.secret.example.com"},
		{name: "email-not-permitted", email: "simon@example.net"},
		{name: "email-excluded", email: "simon@secret.example.com"},
		{name: "ip-not-permitted", ip: "192.168.1.1"},
		{name: "ip-excluded", ip: "10.1.2.3"},
		{name: "uri-not-permitted", uri: "https://app.example.net/simon"},
		{name: "uri-excluded", uri: "https://secret.example.com/simon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := clientTemplate("hand-signed "+tt.name, now)
			if tt.dns != "" {
				tmpl.DNSNames = []string{tt.dns}
			}
			if tt.email != "" {
				tmpl.EmailAddresses = []string{tt.email}
			}
			if tt.ip != "" {
				tmpl.IPAddresses = []net.IP{net.ParseIP(tt.ip)}
			}
			if tt.uri != "" {
				u, err := url.Parse(tt.uri)
				if err != nil {
					t.Fatal(err)
				}
				tmpl.URIs = []*url.URL{u}
			}
			leaf := sign(t, tmpl, inter)
			leafFile := writePEM(t, dir, tt.name+".pem", leaf.cert)
			chainFile := writePEM(t, dir, tt.name+"-chain.pem", leaf.cert, inter.cert)
			peers := []struct {
				name   string
				verify func() (ok bool, why string)
				// constraint recognises the peer's refusal for a name
				// constraint, so a refusal for another reason fails.
				constraint string
			}{
				{"go", func() (bool, string) { return goVerify(leaf.cert, inter.cert, root.cert, now) }, "constraint"},
				{"openssl", func() (bool, string) {
					return runPeer("openssl", "verify", "-CAfile", rootFile, "-untrusted", interFile, "-purpose", "sslclient", leafFile)
				}, "subtree violation"},
				{"gnutls", func() (bool, string) {
					return runPeer("certtool", "--verify", "--load-ca-certificate", rootFile, "--infile", chainFile)
				}, "constraints"},
				{"nss", func() (bool, string) {
					run(t, "certutil", "-A", "-d", "sql:"+nssDB, "-n", tt.name, "-t", ",,", "-a", "-i", leafFile)
					return runPeer("certutil", "-V", "-d", "sql:"+nssDB, "-n", tt.name, "-u", "C")
				}, "not permitted to issue a certificate with this name"},
			}
			for _, p := range peers {
				ok, out := p.verify()
				limit, known := peerLimits[tt.name][p.name]
				switch {
				case known && ok != tt.wantOK:
					t.Logf("%s: accepted = %v, a known limit: %s", p.name, ok, limit)
				case known:
					t.Errorf("%s: accepted = %v as it should: remove the known limit %q\n%s", p.name, ok, limit, out)
				case ok != tt.wantOK:
					t.Errorf("%s: accepted = %v; want %v\n%s", p.name, ok, tt.wantOK, out)
				case !ok && !strings.Contains(out, p.constraint):
					t.Errorf("%s refused it, but not for a name constraint (want %q in its output):\n%s", p.name, p.constraint, out)
				}
			}
		})
	}
}

// goVerify verifies leaf through inter to root for clientAuth with
// crypto/x509, as the proxy's TLS stack does.
func goVerify(leaf, inter, root *x509.Certificate, now time.Time) (bool, string) {
	roots, inters := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(root)
	inters.AddCert(inter)
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inters, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err == nil {
		return true, ""
	}
	var inv x509.CertificateInvalidError
	if errors.As(err, &inv) && inv.Reason == x509.CANotAuthorizedForThisName {
		return false, "constraint: " + err.Error()
	}
	return false, err.Error()
}

// runPeer runs a verifier; it accepts when it exits 0.
func runPeer(name string, args ...string) (bool, string) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return err == nil, string(out)
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
