package ca

import (
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
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
