//go:build interop

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"minica/formats"
)

// runTool runs name with args and returns its combined output; a failure
// fails the test with that output.
func runTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	b, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
	}
	return string(b)
}

// The wire format of docs/serve.md works with the usual tools: a CSR made
// by openssl req, posted by curl with the certificate to renew, comes back
// as the successor and the chain, which openssl verify accepts; and curl
// without a certificate gets the problem details.
func TestRenewWithOpenSSLAndCurl(t *testing.T) {
	t.Parallel()
	curl := needTool(t, "curl", "curl")
	openssl := needTool(t, "openssl", "openssl")
	dir := newCADir(t)
	mustMinica(t, dir, "issue", "server", "pki", "--dns", "localhost", "--ip", "127.0.0.1")
	mustMinica(t, dir, "issue", "client", "app", "--email", "app@example.com")
	p := startServe(t, dir, "--listen", "", "--listen-tls", "127.0.0.1:0", "--server-cert", "pki")
	work := t.TempDir()
	csr, key, out := filepath.Join(work, "new.csr"), filepath.Join(work, "new.key"), filepath.Join(work, "new.pem")
	runTool(t, openssl, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
		"-subj", "/", "-outform", "DER", "-out", csr)
	cur := filepath.Join(dir, "certs", "app")
	caFile := filepath.Join(dir, "ca.crt")
	code := runTool(t, curl, "-sS", "-o", out, "-w", "%{http_code}", "--cacert", caFile, "--cert", filepath.Join(cur, "current.crt"),
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
	if got := runTool(t, openssl, "verify", "-CAfile", caFile, "-purpose", "sslclient", out); !strings.Contains(got, ": OK") {
		t.Errorf("openssl verify: %s", got)
	}
	if got := runTool(t, openssl, "x509", "-in", out, "-noout", "-pubkey"); got != runTool(t, openssl, "pkey", "-in", key, "-pubout") {
		t.Errorf("the successor is not for openssl's key")
	}
	body := runTool(t, curl, "-sS", "--cacert", caFile, "-H", "Content-Type: application/pkcs10", "--data-binary", "@"+csr, p.base+"/renew")
	if !strings.Contains(body, `"status":403,"reason":"no-client-certificate"`) {
		t.Errorf("curl without a certificate got %s", body)
	}
}

// The bootstrap recipe of docs/serve.md with the usual tools: a token from
// `minica token`, a key and CSR made by openssl req, the token posted by
// curl from a header file (not its command line), the certificate back
// with the token's names, accepted by openssl verify; the token then used.
func TestBootstrapWithOpenSSLAndCurl(t *testing.T) {
	t.Parallel()
	curl := needTool(t, "curl", "curl")
	openssl := needTool(t, "openssl", "openssl")
	dir := newCADir(t)
	mustMinica(t, dir, "issue", "server", "pki", "--dns", "localhost", "--ip", "127.0.0.1")
	p := startServe(t, dir, "--listen", "", "--listen-tls", "127.0.0.1:0", "--server-cert", "pki")
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(mustMinica(t, dir, "token", "web", "--dns", "web.example.com", "--expires", "2h", "--json")), &tok); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	csr, key, out, header := filepath.Join(work, "req.der"), filepath.Join(work, "web.key"), filepath.Join(work, "web.pem"), filepath.Join(work, "auth")
	if err := os.WriteFile(header, []byte("Authorization: Bearer "+tok.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runTool(t, openssl, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
		"-subj", "/", "-addext", "subjectAltName=DNS:web.example.com", "-outform", "DER", "-out", csr)
	caFile := filepath.Join(dir, "ca.crt")
	post := func() string {
		return runTool(t, curl, "-sS", "-o", out, "-w", "%{http_code}", "--cacert", caFile, "-H", "@"+header,
			"-H", "Content-Type: application/pkcs10", "--data-binary", "@"+csr, p.base+"/bootstrap")
	}
	if code := post(); code != "200" {
		t.Fatalf("curl POST /bootstrap = %s\n%s\nserve:\n%s", code, readTestFile(t, out), p.stderr)
	}
	certs, err := formats.ParseCertificates(readTestFile(t, out))
	if err != nil || len(certs) != 2 || len(certs[0].DNSNames) != 1 || certs[0].DNSNames[0] != "web.example.com" {
		t.Fatalf("answer: %d certificates (%v), DNS names %v; want the leaf for web.example.com and the CA", len(certs), err, certs[0].DNSNames)
	}
	if got := runTool(t, openssl, "verify", "-CAfile", caFile, "-purpose", "sslserver", out); !strings.Contains(got, ": OK") {
		t.Errorf("openssl verify: %s", got)
	}
	if got := runTool(t, openssl, "x509", "-in", out, "-noout", "-pubkey"); got != runTool(t, openssl, "pkey", "-in", key, "-pubout") {
		t.Errorf("the certificate is not for openssl's key")
	}
	// Another key with the same token: used.
	runTool(t, openssl, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
		"-subj", "/", "-outform", "DER", "-out", csr)
	if code := post(); code != "403" || !strings.Contains(string(readTestFile(t, out)), `"reason":"token-used"`) {
		t.Errorf("second machine: %s %s; want 403 token-used", code, readTestFile(t, out))
	}
	if strings.Contains(p.stderr.String(), tok.Token) {
		t.Error("serve logged the token")
	}
}
