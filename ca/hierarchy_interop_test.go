//go:build interop

package ca

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"minica/revoke"
)

// TestHierarchyAgainstOpenSSL has OpenSSL verify leaves of every key type
// under a name-constrained intermediate, with the root as the only trust
// anchor, the leaf's chain file as the untrusted certificates and a CRL for
// each CA (-crl_check_all); then the root revokes the intermediate and
// OpenSSL refuses them at depth 1.
func TestHierarchyAgainstOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Fatal("openssl is required (Debian package openssl)")
	}
	root, inter := newHierarchy(t, Constraints{PermittedDNS: []string{"example.com"}, PermittedEmails: []string{"example.com"}})
	signer := signerOf(t, inter)
	at := fmt.Sprint(hierNow.Add(time.Minute).Unix())
	verify := func(t *testing.T, is *Issued, purpose string) (string, error) {
		out, err := exec.Command(openssl, "verify", "-attime", at, "-purpose", purpose, "-crl_check_all",
			"-CAfile", root.CertFile(), "-untrusted", is.ChainFile,
			"-CRLfile", root.Path(CRLPEMFile), "-CRLfile", inter.Path(CRLPEMFile), is.CertFile).CombinedOutput()
		return string(out), err
	}
	var issued []*Issued
	for _, kt := range []KeyType{ECDSAP256, ECDSAP384, RSA2048, Ed25519} {
		for _, p := range []Profile{Server, Client} {
			name := string(kt) + "-" + string(p)
			req := Request{Name: name, Profile: p, KeyType: kt, DNSNames: []string{name + ".example.com"}, Validity: 90 * 24 * time.Hour}
			purpose := "sslserver"
			if p == Client {
				req = Request{Name: name, Profile: p, KeyType: kt, Emails: []string{"user@example.com"}, EmailInSubject: true, Validity: 90 * 24 * time.Hour}
				purpose = "sslclient"
			}
			is, err := inter.Issue(signer, req)
			if err != nil {
				t.Fatal(err)
			}
			issued = append(issued, is)
			t.Run(name, func(t *testing.T) {
				if out, err := verify(t, is, purpose); err != nil {
					t.Errorf("openssl verify: %v\n%s", err, out)
				}
			})
		}
	}
	rec, err := root.RecordsByName("int1")
	if err != nil || len(rec) != 1 {
		t.Fatalf("the root's record of int1: %v (%d)", err, len(rec))
	}
	if _, err := root.RevokeRecord(rec[0], revoke.CACompromise); err != nil {
		t.Fatal(err)
	}
	if _, err := root.PublishCRL(signerOf(t, root), 0); err != nil {
		t.Fatal(err)
	}
	for _, is := range issued {
		out, err := verify(t, is, "any")
		if err == nil || !strings.Contains(out, "error 23 at 1 depth lookup: certificate revoked") {
			t.Errorf("openssl verify of %s under a revoked intermediate: %v\n%s", is.Record.Name, err, out)
		}
	}
}
