package ca

import (
	"net"
	"strings"
	"testing"
	"time"

	"minica/internal/certlint"
	"minica/revoke"
)

// TestHierarchyZlintEveryKind lints with zlint (the sources of
// internal/certlint) everything a hierarchy made by minica's own code holds:
// the root; intermediates without constraints and with permitted and
// excluded subtrees of every name type; a server and a client leaf of every
// key type under the constrained one (of the default type under the other); and the CRLs of both levels, empty and listing
// revocations (a leaf at the intermediate, the intermediate at the root as
// cACompromise). Zero findings are allowed.
func TestHierarchyZlintEveryKind(t *testing.T) {
	constrained := Constraints{
		PermittedDNS: []string{"example.com"}, ExcludedDNS: []string{"secret.example.com"},
		PermittedEmails: []string{"example.com"}, ExcludedEmails: []string{"secret.example.com"},
		PermittedURIs: []string{"example.com"}, ExcludedURIs: []string{"secret.example.com"},
		PermittedIPs: []*net.IPNet{mustCIDR(t, "10.0.0.0/8")}, ExcludedIPs: []*net.IPNet{mustCIDR(t, "10.1.0.0/16")},
	}
	for _, tt := range []struct {
		name string
		k    Constraints
	}{{"unconstrained", Constraints{}}, {"constrained", constrained}} {
		t.Run(tt.name, func(t *testing.T) {
			root, inter := newHierarchy(t, tt.k)
			certlint.Certificate(t, root.Cert.Raw)
			certlint.Certificate(t, inter.Cert.Raw)
			lintCRL(t, root)
			lintCRL(t, inter)
			signer := signerOf(t, inter)
			var last *Issued
			for _, kt := range KeyTypes {
				// Every key type under the constrained one; the key type
				// and the constraints do not meet in any lint.
				if tt.name == "unconstrained" && kt != ECDSAP256 || testing.Short() && kt == RSA4096 {
					continue
				}
				name := strings.ReplaceAll(strings.ToLower(string(kt)), "_", "-")
				for _, req := range []Request{
					{Name: name + ".example.com", Profile: Server, KeyType: kt, IPs: []net.IP{net.ParseIP("10.2.0.1")}, Validity: 90 * 24 * time.Hour},
					{Name: name + "-client", Profile: Client, KeyType: kt, Emails: []string{name + "@example.com"}, EmailInSubject: true, Validity: 90 * 24 * time.Hour},
				} {
					is, err := inter.Issue(signer, req)
					if err != nil {
						t.Fatalf("Issue %s: %v", req.Name, err)
					}
					certlint.Certificate(t, is.Cert.Raw)
					last = is
				}
			}
			if _, err := inter.Revoke(last.Cert.SerialNumber, revoke.KeyCompromise); err != nil {
				t.Fatal(err)
			}
			if _, err := inter.PublishCRL(signer, 0); err != nil {
				t.Fatal(err)
			}
			lintCRL(t, inter)
			rootSigner := signerOf(t, root)
			if _, err := root.Revoke(inter.Cert.SerialNumber, revoke.CACompromise); err != nil {
				t.Fatal(err)
			}
			if _, err := root.PublishCRL(rootSigner, 0); err != nil {
				t.Fatal(err)
			}
			lintCRL(t, root)
			crl, err := root.LoadCRL()
			if err != nil {
				t.Fatal(err)
			}
			if e, ok := crl.Lookup(inter.Cert.SerialNumber); !ok || e.Reason != revoke.CACompromise {
				t.Errorf("root CRL entry of the intermediate = %+v, %v; want cACompromise", e, ok)
			}
		})
	}
}

func lintCRL(t *testing.T, c *CA) {
	t.Helper()
	der, err := c.dir.ReadFile(CRLDERFile)
	if err != nil {
		t.Fatal(err)
	}
	certlint.RevocationList(t, der)
}
