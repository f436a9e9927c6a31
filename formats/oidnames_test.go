package formats

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"minica/internal/testca"
)

// TestOpenSSLNames checks every entry of the generated name table against
// the installed openssl: one subject holds an attribute of each OID, and
// DistinguishedName must name each as `openssl x509 -nameopt RFC2253` does.
func TestOpenSSLNames(t *testing.T) {
	var seq pkix.RDNSequence
	for s := range opensslNames() {
		var oid asn1.ObjectIdentifier
		for _, arc := range strings.Split(s, ".") {
			n, err := strconv.Atoi(arc)
			if err != nil {
				t.Fatalf("opensslNames: OID %q: %v", s, err)
			}
			oid = append(oid, n)
		}
		seq = append(seq, pkix.RelativeDistinguishedNameSET{{Type: oid, Value: "v"}})
	}
	raw, err := asn1.Marshal(seq)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := testca.New(t, "Test CA").Leaf(t, &x509.Certificate{RawSubject: raw})
	dn, err := DistinguishedName(cert.RawSubject)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("openssl", "x509", "-in", path, "-noout", "-subject", "-nameopt", "RFC2253").Output()
	if err != nil {
		t.Fatalf("running openssl (it must be installed for this test): %v", err)
	}
	got := strings.Split(dn, ",")
	want := strings.Split(strings.TrimSuffix(strings.TrimPrefix(string(out), "subject="), "\n"), ",")
	if len(got) != len(want) || len(got) != len(opensslNames()) {
		t.Fatalf("%d attributes in minica's DN, %d in openssl's; want %d", len(got), len(want), len(opensslNames()))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("attribute %d: minica writes %q; openssl %q", i, got[i], want[i])
		}
	}
}
