//go:build interop

package enroll

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"howett.net/plist"
)

// TestEnrollMobileconfigOpenSSL checks a signed Apple profile with OpenSSL:
// `openssl cms -verify` and `openssl smime -verify` accept its signature
// against the CA, the content is the profile plist, and `openssl pkcs12`
// opens the PKCS#12 payload with the chosen password.
func TestEnrollMobileconfigOpenSSL(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl not found: apt-get install -y openssl")
	}
	c, profile := signedProfile(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "simon.mobileconfig")
	os.WriteFile(in, profile, 0o600)
	var content []byte
	for _, tool := range []string{"cms", "smime"} {
		out := filepath.Join(dir, tool+".xml")
		cmd := exec.Command("openssl", tool, "-verify", "-inform", "DER", "-in", in, "-CAfile", c.CertFile(), "-purpose", "any", "-out", out)
		if msg, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(msg), "Verification successful") {
			t.Fatalf("openssl %s -verify: %v\n%s", tool, err, msg)
		}
		content, _ = os.ReadFile(out)
	}
	checkMobileconfig(t, content, c.Cert)
	var parsed struct {
		PayloadContent []struct {
			PayloadType    string
			PayloadContent []byte
		}
	}
	if _, err := plist.Unmarshal(content, &parsed); err != nil {
		t.Fatal(err)
	}
	p12 := filepath.Join(dir, "simon.p12")
	for _, p := range parsed.PayloadContent {
		if p.PayloadType == "com.apple.security.pkcs12" {
			os.WriteFile(p12, p.PayloadContent, 0o600)
		}
	}
	pw := filepath.Join(dir, "pw")
	os.WriteFile(pw, []byte(testPassword), 0o600)
	out, err := exec.Command("openssl", "pkcs12", "-in", p12, "-passin", "file:"+pw, "-nodes", "-info").CombinedOutput()
	if err != nil || !regexp.MustCompile(`subject=.*CN ?= ?simon`).MatchString(string(out)) || !strings.Contains(string(out), "PRIVATE KEY") {
		t.Fatalf("openssl pkcs12 on the payload: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "pbeWithSHA1And3-KeyTripleDES-CBC") {
		t.Errorf("the payload is not the compat PKCS#12 (3DES) that Apple devices read:\n%s", out)
	}
}
