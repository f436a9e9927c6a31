//go:build interop

package ocsp

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/ca"
	"minica/revoke"
)

// TestOCSPAgainstOpenSSL asks `openssl ocsp` (POST, with its nonce) and
// curl (the RFC 5019 GET form, checked by `openssl ocsp -respin`) about a
// valid certificate, the same one revoked, and one minica never issued.
func TestOCSPAgainstOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Fatal("openssl is required (Debian package openssl)")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is required (Debian package curl)")
	}
	dir := t.TempDir()
	// openssl checks thisUpdate and nextUpdate against the system clock.
	c, err := ca.Init(filepath.Join(dir, "ca"), ca.InitOptions{CommonName: "Interop Root"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	signer, err := c.LoadSigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	simon := issue(t, c, signer, "simon")
	simonFile := writePEM(t, dir, "simon.crt", simon.Raw)
	strangerFile := writePEM(t, dir, "stranger.crt", unrecorded(t, c, signer).Raw)
	caFile := c.CertFile()

	r := newTestResponder(t, Config{CA: c, Signer: signer, Log: os.Stderr})
	mux := http.NewServeMux()
	mux.Handle("/", r)     // openssl posts to the URL's path, "/" when it has none
	mux.Handle("/ocsp", r) // ServeMux would redirect POST /ocsp to /ocsp/
	mux.Handle("/ocsp/", r)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	base := "http://" + ln.Addr().String()

	run := func(name string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	ask := func(cert, url string) string {
		return run(openssl, "ocsp", "-issuer", caFile, "-cert", cert, "-url", url, "-CAfile", caFile)
	}
	getForm := func(cert string) string {
		req := filepath.Join(dir, "req.der")
		resp := filepath.Join(dir, "resp.der")
		run(openssl, "ocsp", "-issuer", caFile, "-cert", cert, "-no_nonce", "-reqout", req)
		der, err := os.ReadFile(req)
		if err != nil {
			t.Fatal(err)
		}
		run(curl, "-sSf", "--max-time", "10", "-o", resp, base+"/ocsp/"+url.PathEscape(base64.StdEncoding.EncodeToString(der)))
		return run(openssl, "ocsp", "-respin", resp, "-no_nonce", "-issuer", caFile, "-cert", cert, "-CAfile", caFile)
	}
	want := func(out, status string) {
		t.Helper()
		if !strings.Contains(out, ": "+status+"\n") || !strings.Contains(out, "Response verify OK") || strings.Contains(out, "WARNING") {
			t.Errorf("want %s, verified, no warning; got:\n%s", status, out)
		}
	}

	want(ask(simonFile, base), "good")
	want(ask(simonFile, base+"/ocsp"), "good")
	want(getForm(simonFile), "good")
	want(ask(strangerFile, base), "unknown")

	unlock, err := c.Lock(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Revoke(simon.SerialNumber, revoke.KeyCompromise)
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	r.CRLChanged() // as serve does when it sees the new CRL
	out := ask(simonFile, base)
	want(out, "revoked")
	if !strings.Contains(out, "Reason: keyCompromise") || !strings.Contains(out, "Revocation Time:") {
		t.Errorf("revoked response lacks its reason or time:\n%s", out)
	}
	want(getForm(simonFile), "revoked")
}

func writePEM(t *testing.T, dir, name string, der []byte) string {
	t.Helper()
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}
