package ca

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A root issues no leaves: a link on it is refused when it is made, not
// when the person uses it, and nothing is written.
func TestCreateEnrollmentRefusedOnRoot(t *testing.T) {
	root, _ := newRoot(t, InitOptions{Settings: withCRLURL("http://pki.example.com/root.crl")})
	before := treeSum(t, root.Dir().Path())
	if err := root.CheckEnrollment("simon", EnrollIdentity{}, time.Hour); !errors.Is(err, ErrRootCA) {
		t.Errorf("CheckEnrollment on a root error = %v; want ErrRootCA", err)
	}
	if _, err := root.CreateEnrollment("simon", EnrollIdentity{}, time.Hour); !errors.Is(err, ErrRootCA) {
		t.Errorf("CreateEnrollment on a root error = %v; want ErrRootCA", err)
	}
	if _, err := os.Stat(filepath.Join(root.Dir().Path(), enrollDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after a refused enrollment: %v", enrollDir, err)
	}
	if after := treeSum(t, root.Dir().Path()); after != before {
		t.Error("a refused enrollment changed the root's directory")
	}
}

// Under an intermediate a link issues a leaf that chains through the
// intermediate to the root, and a name outside the intermediate's
// constraints is refused when the link is made.
func TestEnrollUnderIntermediate(t *testing.T) {
	root, inter := newHierarchy(t, Constraints{PermittedEmails: []string{"example.com"}})
	if _, err := inter.CreateEnrollment("eve", EnrollIdentity{Emails: []string{"eve@example.org"}}, time.Hour); err == nil {
		t.Error("CreateEnrollment with an email outside the permitted subtree succeeded")
	}
	got, err := inter.CreateEnrollment("simon", EnrollIdentity{Emails: []string{"simon@example.com"}}, time.Hour)
	if err != nil {
		t.Fatalf("CreateEnrollment under an intermediate: %v", err)
	}
	key := newKey(t)
	issued, _, err := inter.Enroll(signerOf(t, inter), got.Token, "192.0.2.7", key.Public())
	if err != nil {
		t.Fatalf("Enroll under an intermediate: %v", err)
	}
	if len(inter.Chain) != 2 || !inter.Chain[0].Equal(inter.Cert) || !inter.Chain[1].Equal(root.Cert) {
		t.Fatalf("the intermediate's chain is %d certificates; want the intermediate and the root", len(inter.Chain))
	}
	roots, ints := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(root.Cert)
	ints.AddCert(inter.Cert)
	if _, err := issued.Cert.Verify(x509.VerifyOptions{Roots: roots, Intermediates: ints, CurrentTime: hierNow,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the enrolled certificate does not chain to the root: %v", err)
	}
}

// Every lookup, whatever the token (a valid one, an unknown one, one of the
// wrong shape, one character off, one whose file names another person),
// hashes it and makes exactly one constant-time comparison of two 64-digit
// hashes, so that the answer's timing does not tell them apart.
func TestLookupEnrollmentDoesTheSameWork(t *testing.T) {
	c, _ := newEnrollCA(t)
	alice, err := c.CreateEnrollment("alice", EnrollIdentity{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := c.CreateEnrollment("bob", EnrollIdentity{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	bobFile := filepath.Join(c.Dir().Path(), "db", "enroll", bob.Enrollment.ID+".json")
	data, _ := os.ReadFile(bobFile)
	os.WriteFile(bobFile, []byte(strings.Replace(string(data), `"name":"bob"`, `"name":"alice"`, 1)), 0o600)

	var calls []string
	orig := equalTokenHash
	t.Cleanup(func() { equalTokenHash = orig })
	equalTokenHash = func(got, want string) bool {
		calls = append(calls, fmt.Sprintf("%d/%d", len(got), len(want)))
		return orig(got, want)
	}
	tests := []struct {
		name, token string
		ok          bool
	}{
		{"valid", alice.Token, true},
		{"unknown", strings.Repeat("A", 43), false},
		{"malformed", "../../ca.key", false},
		{"empty", "", false},
		{"one character off", flipFirst(alice.Token), false},
		{"file of another name", bob.Token, false},
	}
	for _, tt := range tests {
		calls = nil
		_, err := c.LookupEnrollment(tt.token)
		if (err == nil) != tt.ok || (!tt.ok && !errors.Is(err, ErrEnrollmentUnknown)) {
			t.Errorf("%s: LookupEnrollment error = %v; want ok %v or ErrEnrollmentUnknown", tt.name, err, tt.ok)
		}
		if len(calls) != 1 || calls[0] != "64/64" {
			t.Errorf("%s: comparisons %v; want one of two 64-digit hashes", tt.name, calls)
		}
	}
}

// An enrollment keeps every identity field of issue client, DNS and IP
// SANs included, through its file, into the certificate.
func TestEnrollCarriesEveryIdentityField(t *testing.T) {
	c, signer := newEnrollCA(t)
	id := EnrollIdentity{CommonName: "Dev One", Organization: []string{"Example"}, OrganizationalUnit: []string{"Lab"},
		Emails: []string{"dev1@example.com"}, URIs: []string{"spiffe://example.com/dev1"}, DNSNames: []string{"dev1.example.com"},
		IPs: []net.IP{net.ParseIP("10.0.0.1")}, EmailInSubject: true, Validity: Duration(30 * 24 * time.Hour)}
	got, err := c.CreateEnrollment("dev1", id, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	issued, _, err := c.Enroll(signer, got.Token, "192.0.2.7", newKey(t).Public())
	if err != nil {
		t.Fatal(err)
	}
	cert := issued.Cert
	if cert.Subject.CommonName != "Dev One" || cert.Subject.Organization[0] != "Example" || cert.Subject.OrganizationalUnit[0] != "Lab" {
		t.Errorf("subject %v", cert.Subject)
	}
	if len(cert.DNSNames) != 1 || cert.DNSNames[0] != "dev1.example.com" || len(cert.IPAddresses) != 1 || !cert.IPAddresses[0].Equal(net.ParseIP("10.0.0.1")) {
		t.Errorf("DNS %v, IPs %v; want dev1.example.com and 10.0.0.1", cert.DNSNames, cert.IPAddresses)
	}
	if len(cert.EmailAddresses) != 1 || len(cert.URIs) != 1 || cert.URIs[0].String() != "spiffe://example.com/dev1" {
		t.Errorf("emails %v, URIs %v", cert.EmailAddresses, cert.URIs)
	}
	if d := cert.NotAfter.Sub(cert.NotBefore); d < 30*24*time.Hour || d > 30*24*time.Hour+time.Hour {
		t.Errorf("validity %s; want 30d", d)
	}
}
