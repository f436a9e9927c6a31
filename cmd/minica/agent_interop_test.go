//go:build interop

package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"minica/formats"
)

// The wire format of docs/serve.md works with the usual tools: a CSR made
// by openssl req, posted by curl with the certificate to renew, comes back
// as the successor and the chain, which openssl verify accepts; and curl
// without a certificate gets the problem details.
func TestRenewWithOpenSSLAndCurl(t *testing.T) {
	curl := needTool(t, "curl", "curl")
	openssl := needTool(t, "openssl", "openssl")
	dir := newCADir(t)
	mustMinica(t, dir, "issue", "server", "pki", "--dns", "localhost", "--ip", "127.0.0.1")
	mustMinica(t, dir, "issue", "client", "app", "--email", "app@example.com")
	p := startServe(t, dir, "--listen", "", "--listen-tls", "127.0.0.1:0", "--server-cert", "pki")
	work := t.TempDir()
	csr, key, out := filepath.Join(work, "new.csr"), filepath.Join(work, "new.key"), filepath.Join(work, "new.pem")
	run := func(name string, args ...string) string {
		t.Helper()
		b, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
		}
		return string(b)
	}
	run(openssl, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
		"-subj", "/", "-outform", "DER", "-out", csr)
	cur := filepath.Join(dir, "certs", "app")
	caFile := filepath.Join(dir, "ca.crt")
	code := run(curl, "-sS", "-o", out, "-w", "%{http_code}", "--cacert", caFile, "--cert", filepath.Join(cur, "current.crt"),
		"--key", filepath.Join(cur, "current.key"), "-H", "Content-Type: application/pkcs10", "--data-binary", "@"+csr, p.base+"/renew")
	if code != "200" {
		t.Fatalf("curl POST /renew = %s\n%s\nserve:\n%s", code, readTestFile(t, out), p.stderr)
	}
	certs, err := formats.ParseCertificates(readTestFile(t, out))
	if err != nil || len(certs) != 2 {
		t.Fatalf("answer: %d certificates, %v", len(certs), err)
	}
	if certs[0].Subject.CommonName != "app" || len(certs[0].EmailAddresses) != 1 || certs[0].EmailAddresses[0] != "app@example.com" {
		t.Errorf("successor CN %q emails %v; want app's", certs[0].Subject.CommonName, certs[0].EmailAddresses)
	}
	if got := run(openssl, "verify", "-CAfile", caFile, "-purpose", "sslclient", out); !strings.Contains(got, ": OK") {
		t.Errorf("openssl verify: %s", got)
	}
	if got := run(openssl, "x509", "-in", out, "-noout", "-pubkey"); got != run(openssl, "pkey", "-in", key, "-pubout") {
		t.Errorf("the successor is not for openssl's key")
	}
	body := run(curl, "-sS", "--cacert", caFile, "-H", "Content-Type: application/pkcs10", "--data-binary", "@"+csr, p.base+"/renew")
	if !strings.Contains(body, `"status":403,"reason":"no-client-certificate"`) {
		t.Errorf("curl without a certificate got %s", body)
	}
}
