//go:build interop && cgo && !nopkcs11

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/internal/softhsm"
)

// A token outage under a running `minica serve`: the SoftHSM2 token's
// directory moved away, then back. While it is away /healthz answers 503
// with can-sign: false and minica_serve_can_sign is 0, and a renewal
// fails; once it is back serve finds the key again by itself (log:
// ca-key-reopened), /healthz is 200 and renewals work, without a restart.
func TestServeTokenOutage(t *testing.T) {
	curl := needTool(t, "curl", "curl")
	openssl := needTool(t, "openssl", "openssl")
	tok, err := softhsm.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOFTHSM2_CONF", tok.Conf)
	t.Setenv("MINICA_PIN", softhsm.PIN)
	dir := filepath.Join(t.TempDir(), "ca")
	mustMinica(t, dir, "init", "--cn", "Token Root", "--key-uri", tok.URI("serve"))
	mustMinica(t, dir, "issue", "server", "pki", "--dns", "localhost", "--ip", "127.0.0.1")
	for _, name := range []string{"app", "app2"} {
		mustMinica(t, dir, "issue", "client", name, "--email", name+"@example.com")
	}
	pki := filepath.Join(dir, "certs", "pki")
	p := startServe(t, dir, "--listen-tls", "127.0.0.1:0", "--cert", filepath.Join(pki, "current.crt"), "--key", filepath.Join(pki, "current.key"))
	work := t.TempDir()
	renew := func(name string) string {
		t.Helper()
		csr := filepath.Join(work, name+".csr")
		if b, err := exec.Command(openssl, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
			"-keyout", filepath.Join(work, name+".key"), "-subj", "/", "-outform", "DER", "-out", csr).CombinedOutput(); err != nil {
			t.Fatalf("openssl req: %v\n%s", err, b)
		}
		certs := filepath.Join(dir, "certs", name)
		code, err := exec.Command(curl, "-sS", "-o", filepath.Join(work, name+".out"), "-w", "%{http_code}", "--cacert", filepath.Join(dir, "ca.crt"),
			"--cert", filepath.Join(certs, "current.crt"), "--key", filepath.Join(certs, "current.key"),
			"-H", "Content-Type: application/pkcs10", "--data-binary", "@"+csr, p.bases[1]+"/renew").Output()
		if err != nil {
			t.Fatalf("curl: %v", err)
		}
		return string(code)
	}
	// waitHealth polls /healthz (bounded) until it answers code with want
	// in its body.
	waitHealth := func(code int, want string) {
		t.Helper()
		var last string
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			resp, body := p.fetch(t, "/healthz")
			if last = string(body); resp.StatusCode == code && strings.Contains(last, want) {
				return
			}
		}
		t.Fatalf("/healthz = %q; want %d with %q\nserve:\n%s", last, code, want, p.stderr)
	}
	metric := func(line string) {
		t.Helper()
		if _, m := p.fetch(t, "/metrics"); !strings.Contains(string(m), "\n"+line+"\n") {
			t.Errorf("metrics lack %s:\n%s", line, m)
		}
	}
	waitHealth(200, "can-sign: true\n")

	away := tok.TokenDir + ".away"
	if err := os.Rename(tok.TokenDir, away); err != nil {
		t.Fatal(err)
	}
	waitHealth(503, "can-sign: false\n")
	metric("minica_serve_can_sign 0")
	if code := renew("app"); code == "200" {
		t.Errorf("a renewal with the token away = 200")
	}
	if err := os.Rename(away, tok.TokenDir); err != nil {
		t.Fatal(err)
	}
	waitHealth(200, "can-sign: true\n")
	metric("minica_serve_can_sign 1")
	if code := renew("app2"); code != "200" {
		t.Fatalf("a renewal with the token back = %s\n%s\nserve:\n%s", code, readTestFile(t, filepath.Join(work, "app2.out")), p.stderr)
	}
	for _, want := range []string{"ca-key-unusable error=\"pkcs11: 0x82: CKR_OBJECT_HANDLE_INVALID\"", "ca-key-reopen-failed", "ca-key-reopened"} {
		if !strings.Contains(p.stderr.String(), want) {
			t.Errorf("serve's log lacks %s:\n%s", want, p.stderr)
		}
	}
}
