package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"minica/ca"
	"minica/revoke"
)

// The tests of this file run `minica serve` as a real process (the test
// binary, as minica) on 127.0.0.1, while other minica processes change the
// CA directory.

// serveProc is a running `minica serve`.
type serveProc struct {
	cmd     *exec.Cmd
	base    string   // the first of bases
	bases   []string // http://127.0.0.1:PORT, https://127.0.0.1:PORT
	metrics string   // 127.0.0.1:PORT of --metrics-listen
	ocsp    string   // http://127.0.0.1:PORT of --listen-ocsp
	client  *http.Client
	stderr  *syncBuffer
	exited  chan error
}

var serveListening = regexp.MustCompile(`^minica serve: listening on ((?:https?://127\.0\.0\.1:\d+(?:, )?)+)(?:, metrics on (127\.0\.0\.1:\d+))?(?:, ocsp on (http://127\.0\.0\.1:\d+))?$`)

// startServe runs minica serve on a free loopback port (HTTP unless args
// say otherwise) and waits for its listening line.
func startServe(t *testing.T, dir string, args ...string) *serveProc {
	t.Helper()
	return startServeWithEnv(t, nil, dir, args...)
}

// startServeWithEnv is startServe with the extra environment variables env.
func startServeWithEnv(t *testing.T, env []string, dir string, args ...string) *serveProc {
	t.Helper()
	if !slices.Contains(args, "--listen") {
		args = append([]string{"--listen", "127.0.0.1:0"}, args...)
	}
	cmd, stderr, exited, m := startListeningWithEnv(t, env, dir, serveListening, append([]string{"serve"}, args...)...)
	p := &serveProc{cmd: cmd, stderr: stderr, exited: exited}
	p.bases, p.metrics, p.ocsp = strings.Split(m[1], ", "), m[2], m[3]
	p.base = p.bases[0]
	return p
}

// fetch GETs path with the header pairs and returns the response and body.
func (p *serveProc) fetch(t *testing.T, path string, header ...string) (*http.Response, []byte) {
	t.Helper()
	url := path
	if !strings.Contains(path, "://") {
		url = p.base + path
	}
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := p.client
	if client == nil {
		client = &http.Client{Timeout: 70 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", path, err)
	}
	return resp, body
}

// servedCRL GETs /crl.der and parses it against the CA of dir.
func (p *serveProc) servedCRL(t *testing.T, dir string) (*revoke.CRL, string) {
	t.Helper()
	resp, body := p.fetch(t, "/crl.der")
	if resp.StatusCode != 200 {
		t.Fatalf("GET /crl.der = %d", resp.StatusCode)
	}
	crl, err := revoke.ParseCRL(body, caCert(t, dir))
	if err != nil {
		t.Fatalf("the served CRL: %v", err)
	}
	return crl, resp.Header.Get("ETag")
}

func caCert(t *testing.T, dir string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(readTestFile(t, filepath.Join(dir, "ca.crt")))
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func readTestFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// serialOf returns the serial of the only certificate of name.
func serialOf(t *testing.T, dir, name string) string {
	t.Helper()
	m := serialCerts(filepath.Join(dir, "certs", name, "*.crt"))
	if len(m) != 1 {
		t.Fatalf("finding the certificate of %s: %v", name, m)
	}
	block, _ := pem.Decode(readTestFile(t, m[0]))
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return ca.SerialHex(cert.SerialNumber)
}

// minica serve hands out the CA certificate and a CRL that openssl reads,
// answers 304 to the ETag it gave, serves a CRL that `minica revoke`
// publishes from another process without a restart, wakes a long poll with
// it, never serves the key through a planted symlink, and stops on SIGTERM.
func TestServeProcess(t *testing.T) {
	t.Parallel()
	openssl := needTool(t, "openssl", "openssl")
	dir := newCADir(t)
	mustMinica(t, dir, "issue", "client", "simon", "--email", "simon@example.com")
	mustMinica(t, dir, "issue", "client", "bob", "--email", "bob@example.com")
	p := startServe(t, dir)

	resp, body := p.fetch(t, "/ca.crt")
	if resp.StatusCode != 200 || !bytes.Equal(body, caCert(t, dir).Raw) || resp.Header.Get("Content-Type") != "application/pkix-cert" {
		t.Fatalf("GET /ca.crt = %d %s, %d bytes; want 200 with the CA certificate's DER", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
	resp, body = p.fetch(t, "/crl.der")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/pkix-crl" {
		t.Fatalf("GET /crl.der = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	crlFile := filepath.Join(t.TempDir(), "served.der")
	os.WriteFile(crlFile, body, 0o644)
	if out, err := exec.Command(openssl, "crl", "-inform", "DER", "-in", crlFile, "-noout", "-CAfile", filepath.Join(dir, "ca.crt")).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "verify OK") {
		t.Fatalf("openssl crl on the served CRL: %v\n%s", err, out)
	}
	etag := resp.Header.Get("ETag")
	if resp, _ := p.fetch(t, "/crl.der", "If-None-Match", etag); resp.StatusCode != 304 {
		t.Fatalf("GET /crl.der with its ETag = %d; want 304", resp.StatusCode)
	}

	// A revoke in another process, seen by a plain GET.
	mustMinica(t, dir, "revoke", "simon")
	revoked := time.Now()
	simon := serialOf(t, dir, "simon")
	eventually(t, "simon on the served CRL", func() string {
		crl, _ := p.servedCRL(t, dir)
		if !listed(crl, simon) {
			return "not listed"
		}
		return ""
	})
	t.Logf("a plain GET saw the revocation %s after revoke returned", time.Since(revoked).Round(time.Millisecond))

	// A long poll, woken by the next revoke.
	_, etag = p.servedCRL(t, dir)
	type answer struct {
		resp *http.Response
		body []byte
		at   time.Time
	}
	polled := make(chan answer, 1)
	go func() {
		resp, body := p.fetch(t, "/crl.der", "If-None-Match", etag, "Prefer", "wait=30")
		polled <- answer{resp, body, time.Now()}
	}()
	eventually(t, "the long poll waiting", func() string {
		if _, m := p.fetch(t, "/metrics"); !bytes.Contains(m, []byte("\nminica_serve_long_polls 1\n")) {
			return "not waiting"
		}
		return ""
	})
	mustMinica(t, dir, "revoke", "bob")
	revoked = time.Now()
	select {
	case a := <-polled:
		crl, err := revoke.ParseCRL(a.body, caCert(t, dir))
		if a.resp.StatusCode != 200 || err != nil || !listed(crl, serialOf(t, dir, "bob")) || a.resp.Header.Get("Preference-Applied") != "wait=30" {
			t.Fatalf("long poll = %d, Preference-Applied %q, %v; want 200 with bob's revocation, wait=30", a.resp.StatusCode, a.resp.Header.Get("Preference-Applied"), err)
		}
		t.Logf("the long poll answered %s after revoke returned", a.at.Sub(revoked).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatalf("the long poll did not answer within 10s of the revoke\nstderr: %s", p.stderr)
	}

	// A symlink planted as crl.der, to the key, is refused.
	before, _ := p.servedCRL(t, dir)
	der := filepath.Join(dir, "crl.der")
	os.Remove(der)
	if err := os.Symlink("ca.key", der); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "crl-refused", "not a regular file")
	resp, body = p.fetch(t, "/crl.der")
	if bytes.Contains(body, []byte("PRIVATE KEY")) {
		t.Fatalf("GET /crl.der served the key through a symlink")
	}
	if crl, err := revoke.ParseCRL(body, caCert(t, dir)); resp.StatusCode != 200 || err != nil || crl.Number().Cmp(before.Number()) != 0 {
		t.Fatalf("GET /crl.der with a planted symlink = %d, %v; want the last good CRL", resp.StatusCode, err)
	}
	for _, path := range []string{"/ca.key", "/settings.json", "/db/revoked.log", "/crl.der/../ca.key", "/%63a.key"} {
		if resp, body := p.fetch(t, path); resp.StatusCode == 200 || bytes.Contains(body, []byte("PRIVATE KEY")) {
			t.Errorf("GET %s = %d; want it refused", path, resp.StatusCode)
		}
	}

	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		p.exited <- err
		if err != nil {
			t.Fatalf("minica serve after SIGTERM: %v\nstderr: %s", err, p.stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("minica serve still running 10s after SIGTERM")
	}
	if !strings.Contains(p.stderr.String(), "minica serve: stopped\n") {
		t.Errorf("stderr lacks the stop line:\n%s", p.stderr)
	}
}

// With a CRL of four seconds, serve re-signs it past two, with the CA's
// CRL lifetime, under the same number rules as `minica crl`; its key is
// encrypted, and the password came from --password-file at start.
func TestServeProcessResignsAtHalfLife(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ca")
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("correct horse\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustMinica(t, dir, "init", "--cn", "Test Root", "--password-file", pw)
	mustMinica(t, dir, "crl", "--next-update", "4s", "--password-file", pw)
	p := startServe(t, dir, "--password-file", pw)
	first, _ := p.servedCRL(t, dir)
	deadline := time.Now().Add(10 * time.Second)
	for {
		crl, _ := p.servedCRL(t, dir)
		if crl.Number().Cmp(first.Number()) > 0 {
			if life := crl.NextUpdate().Sub(crl.ThisUpdate()); life != 7*24*time.Hour {
				t.Errorf("re-signed CRL lives %s; want the CA's 7d", life)
			}
			if since := crl.ThisUpdate().Sub(first.ThisUpdate()); since < 2*time.Second {
				t.Errorf("re-signed %s after the first CRL; want past half of its 4s", since)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRL %s still served 10s after a 4s CRL was published\nstderr: %s", first.Number(), p.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.waitLog(t, "crl-signed")
	if crl, _ := p.servedCRL(t, dir); !strings.Contains(mustMinica(t, dir, "crl", "status"), crl.Number().String()) {
		t.Errorf("crl status does not name the re-signed CRL %s", crl.Number())
	}
}

// With --no-sign, serve warns from the half-life on (log, /healthz,
// /metrics) that the CRL will lapse, and /healthz fails once it has.
func TestServeProcessNoSignWarns(t *testing.T) {
	t.Parallel()
	dir := newCADir(t)
	mustMinica(t, dir, "crl", "--next-update", "2s")
	p := startServe(t, dir, "--no-sign")
	p.waitLog(t, "crl-will-lapse", "--no-sign")
	if resp, body := p.fetch(t, "/healthz"); !strings.HasPrefix(string(body), "ok: warning: serve runs with --no-sign") &&
		!strings.HasPrefix(string(body), "unavailable: the CRL expired") {
		t.Errorf("/healthz past the half-life = %d %q; want the warning", resp.StatusCode, body)
	}
	if _, m := p.fetch(t, "/metrics"); !bytes.Contains(m, []byte("\nminica_serve_crl_lapse_warning 1\n")) {
		t.Errorf("metrics lack the lapse warning:\n%s", m)
	}
	eventually(t, "/healthz past nextUpdate", func() string {
		if resp, body := p.fetch(t, "/healthz"); resp.StatusCode != 503 || !strings.HasPrefix(string(body), "unavailable: the CRL expired at ") {
			return fmt.Sprintf("%d %q", resp.StatusCode, body)
		}
		return ""
	})
}

func listed(crl *revoke.CRL, serialHex string) bool {
	for e := range crl.Entries() {
		if ca.SerialHex(e.Serial) == serialHex {
			return true
		}
	}
	return false
}

func (p *serveProc) waitLog(t *testing.T, parts ...string) {
	t.Helper()
	eventually(t, "the serve log", func() string {
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			if containsAll(line, parts) {
				return ""
			}
		}
		return fmt.Sprintf("without a line holding %q:\n%s", parts, p.stderr)
	})
}

// serve serves HTTPS with a server certificate of the CA, and /healthz and
// /metrics on a listener of their own only.
func TestServeProcessHTTPS(t *testing.T) {
	t.Parallel()
	dir := newCADir(t)
	mustMinica(t, dir, "issue", "server", "pki", "--dns", "localhost", "--ip", "127.0.0.1")
	p := startServe(t, dir, "--listen", "", "--listen-tls", "127.0.0.1:0", "--server-cert", "pki", "--metrics-listen", "127.0.0.1:0")
	if len(p.bases) != 1 || !strings.HasPrefix(p.base, "https://") || p.metrics == "" {
		t.Fatalf("listening on %q, metrics %q; want one https listener and metrics", p.bases, p.metrics)
	}
	roots := x509.NewCertPool()
	roots.AddCert(caCert(t, dir))
	p.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	if resp, body := p.fetch(t, "/ca.crt"); resp.StatusCode != 200 || !bytes.Equal(body, caCert(t, dir).Raw) {
		t.Fatalf("GET /ca.crt over HTTPS = %d; want 200 with the CA certificate", resp.StatusCode)
	}
	if resp, _ := p.fetch(t, "/crl.der"); resp.StatusCode != 200 {
		t.Fatalf("GET /crl.der over HTTPS = %d; want 200", resp.StatusCode)
	}
	if resp, _ := p.fetch(t, "/healthz"); resp.StatusCode != 404 {
		t.Errorf("GET /healthz on the HTTPS listener = %d; want 404 with --metrics-listen", resp.StatusCode)
	}
	p.client = nil
	if resp, body := p.fetch(t, "http://"+p.metrics+"/healthz"); resp.StatusCode != 200 || !strings.HasPrefix(string(body), "ok\n") {
		t.Errorf("GET /healthz on the metrics listener = %d %q; want 200 ok", resp.StatusCode, body)
	}
	if resp, body := p.fetch(t, "http://"+p.metrics+"/metrics"); resp.StatusCode != 200 || !bytes.Contains(body, []byte("minica_serve_crl_number ")) {
		t.Errorf("GET /metrics on the metrics listener = %d; want the metrics", resp.StatusCode)
	}
}
