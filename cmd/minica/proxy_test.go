package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"minica/ca"
)

// The tests of this file run `minica proxy` as a real process (the test
// binary, on PATH as minica through testscript.Main) on 127.0.0.1, in front
// of a Go upstream that echoes the headers it received.

// proxyFixture is a CA with a server certificate "app" and the clients
// alice and bob, and an echoing upstream.
type proxyFixture struct {
	dir      string
	upstream *httptest.Server
	// slowStarted receives a value when the upstream begins a /slow request.
	slowStarted chan struct{}
}

func newProxyFixture(t *testing.T) *proxyFixture {
	t.Helper()
	f := &proxyFixture{dir: newCADir(t), slowStarted: make(chan struct{}, 1)}
	mustMinica(t, f.dir, "issue", "server", "app", "--dns", "localhost", "--ip", "127.0.0.1")
	mustMinica(t, f.dir, "issue", "client", "alice", "--email", "alice@example.com")
	mustMinica(t, f.dir, "issue", "client", "bob", "--email", "bob@example.com")
	f.upstream = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			f.slowStarted <- struct{}{}
			time.Sleep(time.Second)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(r.Header)
	}))
	t.Cleanup(f.upstream.Close)
	return f
}

// file returns the one file of a client matching pattern under certs/NAME.
func (f *proxyFixture) file(t *testing.T, name, ext string) string {
	t.Helper()
	m := serialCerts(filepath.Join(f.dir, "certs", name, "*"+ext))
	if len(m) != 1 {
		t.Fatalf("finding the %s file of %s: %v", ext, name, m)
	}
	return m[0]
}

// proxyProc is a running `minica proxy`.
type proxyProc struct {
	cmd         *exec.Cmd
	addr        string // 127.0.0.1:PORT of the TLS listener
	metricsAddr string
	stderr      *syncBuffer
	exited      chan error
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var listeningLine = regexp.MustCompile(`^minica proxy: listening on (127\.0\.0\.1:\d+), forwarding to \S+, metrics on (127\.0\.0\.1:\d+)$`)

// startProxy runs minica proxy on free loopback ports with the fixture's CA
// and upstream plus args, and waits for its listening line.
func (f *proxyFixture) startProxy(t *testing.T, args ...string) *proxyProc {
	t.Helper()
	base := []string{"proxy", "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--upstream", f.upstream.URL}
	if !slices.Contains(args, "--cert") {
		base = append(base, "--server-cert", "app")
	}
	args = append(base, args...)
	cmd, stderr, exited, m := startListening(t, f.dir, listeningLine, args...)
	p := &proxyProc{cmd: cmd, stderr: stderr, exited: exited}
	p.addr, p.metricsAddr = m[1], m[2]
	return p
}

// startListening runs minica with args and MINICA_DIR=dir, waits at most
// 10 s for its first stdout line and returns the submatches of want in it,
// failing the test when the line does not match. The process is killed at
// the end of the test; exited gets its Wait result.
func startListening(t *testing.T, dir string, want *regexp.Regexp, args ...string) (cmd *exec.Cmd, stderr *syncBuffer, exited chan error, match []string) {
	t.Helper()
	return startListeningWithEnv(t, nil, dir, want, args...)
}

// startListeningWithEnv is startListening with the extra environment
// variables env.
func startListeningWithEnv(t *testing.T, env []string, dir string, want *regexp.Regexp, args ...string) (cmd *exec.Cmd, stderr *syncBuffer, exited chan error, match []string) {
	t.Helper()
	cmd = exec.Command("minica", args...)
	cmd.Env = append(append(os.Environ(), env...), "MINICA_DIR="+dir)
	stderr, exited = &syncBuffer{}, make(chan error, 1)
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting minica %s: %v", args[0], err)
	}
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		if s.Scan() {
			lines <- s.Text()
		}
		close(lines)
		io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	select {
	case line := <-lines:
		if match = want.FindStringSubmatch(line); match == nil {
			t.Fatalf("minica %s printed %q; want the listening line\nstderr: %s", args[0], line, stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("minica %s did not say where it listens within 10s\nstderr: %s", args[0], stderr)
	}
	return cmd, stderr, exited, match
}

// waitLog waits for a line of the proxy's stderr holding every part: the
// proxy logs a refused handshake after the client has seen the alert.
func (p *proxyProc) waitLog(t *testing.T, parts ...string) {
	t.Helper()
	eventually(t, "the proxy's log", func() string {
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			if containsAll(line, parts) {
				return ""
			}
		}
		return fmt.Sprintf("without a line holding %q:\n%s", parts, p.stderr)
	})
}

func containsAll(s string, parts []string) bool {
	for _, part := range parts {
		if !strings.Contains(s, part) {
			return false
		}
	}
	return true
}

// waitExit waits up to d for the proxy to exit and returns its exit code.
func (p *proxyProc) waitExit(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case err := <-p.exited:
		p.exited <- err // for the cleanup
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("waiting for minica proxy: %v", err)
		}
		return 0
	case <-time.After(d):
		t.Fatalf("minica proxy still running after %s\nstderr: %s", d, p.stderr)
		return -1
	}
}

// client is an HTTP client presenting the certificate of name (none for
// ""), trusting the CA, over HTTP/1.1 with keep-alive.
func (f *proxyFixture) client(t *testing.T, name string) *http.Client {
	t.Helper()
	return f.newClient(t, name, false)
}

// newClient is client, over HTTP/2 when h2.
func (f *proxyFixture) newClient(t *testing.T, name string, h2 bool) *http.Client {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(f.dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if name != "" {
		cert, err := tls.LoadX509KeyPair(f.file(t, name, ".crt"), f.file(t, name, ".key"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	tr := &http.Transport{TLSClientConfig: cfg, MaxConnsPerHost: 1, ForceAttemptHTTP2: h2}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

// get requests path and returns the status, the echoed upstream headers
// (on 200) or the body, and whether the connection was reused.
func get(c *http.Client, url string) (status int, headers http.Header, body string, reused bool, err error) {
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", url, nil)
	if err != nil {
		return 0, nil, "", false, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, "", false, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, "", reused, err
	}
	if resp.StatusCode == http.StatusOK {
		err = json.Unmarshal(data, &headers)
	}
	return resp.StatusCode, headers, string(data), reused, err
}

// eventually retries check every 50ms until it returns "" or 3s pass.
func eventually(t *testing.T, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s after 3s", what, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// needTool fails the test, naming the Debian package, when a binary is
// missing: a skipped interop check would pass unnoticed.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found on PATH: install the Debian package %s (apt-get install %s)", name, pkg, pkg)
	}
	return path
}

func TestProxyProcessClients(t *testing.T) {
	t.Parallel()
	curl := needTool(t, "curl", "curl")
	openssl := needTool(t, "openssl", "openssl")
	f := newProxyFixture(t)
	p := f.startProxy(t)
	url := "https://" + p.addr + "/hello"

	t.Run("go client", func(t *testing.T) {
		status, h, body, _, err := get(f.client(t, "alice"), url)
		if err != nil || status != 200 {
			t.Fatalf("GET as alice: %d %q %v", status, body, err)
		}
		for name, want := range map[string]string{
			"X-Ssl-Client-Cn":     "alice",
			"X-Ssl-Client-Email":  "alice@example.com",
			"X-Ssl-Client-Verify": "SUCCESS",
			"X-Forwarded-Proto":   "https",
		} {
			if got := h.Values(name); len(got) != 1 || got[0] != want {
				t.Errorf("upstream got %s %q; want %q", name, got, want)
			}
		}
	})

	caFile := filepath.Join(f.dir, "ca.crt")
	curlGet := func(t *testing.T, args ...string) (string, error) {
		t.Helper()
		args = append([]string{"--silent", "--show-error", "--max-time", "5", "--cacert", caFile, "--write-out", "\n%{http_code}"}, args...)
		out, err := exec.Command(curl, append(args, url)...).CombinedOutput()
		return string(out), err
	}
	t.Run("curl PEM", func(t *testing.T) {
		out, err := curlGet(t, "--cert", f.file(t, "alice", ".crt"), "--key", f.file(t, "alice", ".key"))
		if err != nil || !strings.HasSuffix(out, "\n200") || !strings.Contains(out, `"X-Ssl-Client-Cn":["alice"]`) {
			t.Errorf("curl with alice's PEM: %v\n%s", err, out)
		}
	})
	t.Run("curl P12", func(t *testing.T) {
		work := t.TempDir()
		p12, pwFile := filepath.Join(work, "bob.p12"), filepath.Join(work, "bob.pw")
		mustMinica(t, f.dir, "export", "p12", "bob", "--out", p12, "--password-out", pwFile)
		pw, err := os.ReadFile(pwFile)
		if err != nil {
			t.Fatal(err)
		}
		out, err := curlGet(t, "--cert-type", "P12", "--cert", p12+":"+strings.TrimSpace(string(pw)))
		if err != nil || !strings.HasSuffix(out, "\n200") || !strings.Contains(out, `"X-Ssl-Client-Cn":["bob"]`) {
			t.Errorf("curl with bob's .p12: %v\n%s", err, out)
		}
	})
	t.Run("curl without certificate", func(t *testing.T) {
		out, err := curlGet(t)
		if err == nil || strings.HasSuffix(out, "\n200") {
			t.Errorf("curl without a certificate got through: %v\n%s", err, out)
		}
		p.waitLog(t, " handshake-refused remote=127.0.0.1:", " reason=no-certificate ")
	})
	t.Run("openssl TLS 1.1", func(t *testing.T) {
		cmd := exec.Command(openssl, "s_client", "-connect", p.addr, "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0",
			"-cert", f.file(t, "alice", ".crt"), "-key", f.file(t, "alice", ".key"))
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "alert protocol version") {
			t.Errorf("openssl s_client -tls1_1: %v; want a protocol version alert\n%s", err, out)
		}
		p.waitLog(t, `reason=tls-error error="tls: client offered only unsupported versions`)
	})
	t.Run("health and metrics", func(t *testing.T) {
		status, body := plainGet(t, "http://"+p.metricsAddr+"/healthz")
		if status != 200 || body != "ok\n" {
			t.Errorf("/healthz: %d %q; want 200 \"ok\\n\"", status, body)
		}
		status, body = plainGet(t, "http://"+p.metricsAddr+"/metrics")
		if want := crlNumber(t, f.dir); status != 200 || metricCRLNumber(body) != want {
			t.Errorf("/metrics: %d; want minica_proxy_crl_number %s in\n%s", status, want, body)
		}
		if !regexp.MustCompile(`(?m)^minica_proxy_handshake_failures_total\{reason="no-certificate"\} [1-9]`).MatchString(body) {
			t.Errorf("/metrics lacks the no-certificate handshake failure:\n%s", body)
		}
	})
}

func plainGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// After `minica revoke`, without a restart, a new connection of the revoked
// client is refused and its open keep-alive connection gets 403, within the
// reload interval (eventually's 3s bound is that interval plus a margin for
// a loaded machine); another client is unaffected.
func TestProxyProcessRevoke(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	p := f.startProxy(t, "--reload-interval", "300ms")
	url := "https://" + p.addr + "/"
	alice, aliceH2, bob := f.client(t, "alice"), f.newClient(t, "alice", true), f.client(t, "bob")
	for name, c := range map[string]*http.Client{"alice": alice, "alice over HTTP/2": aliceH2, "bob": bob} {
		if status, _, body, _, err := get(c, url); err != nil || status != 200 {
			t.Fatalf("GET as %s before the revocation: %d %q %v", name, status, body, err)
		}
	}
	mustMinica(t, f.dir, "revoke", "alice")
	// An open connection of alice gets 403 on its next request when it was
	// in use at the reload; an idle one is closed then (idle-closed), and
	// the new handshake of the next request is refused.
	for name, c := range map[string]*http.Client{"HTTP/1.1": alice, "HTTP/2": aliceH2} {
		eventually(t, "alice's open "+name+" connection", func() string {
			status, _, body, reused, err := get(c, url)
			switch {
			case err != nil && strings.Contains(err.Error(), "bad certificate"):
			case err != nil:
				return fmt.Sprintf("an error: %v", err)
			case !reused:
				return "on a new connection"
			case status != http.StatusForbidden || body != "client certificate revoked\n":
				return fmt.Sprintf("answered %d %q", status, body)
			}
			return ""
		})
	}
	eventually(t, "the proxy's log", func() string {
		for _, proto := range []string{"HTTP/1.1", "HTTP/2.0"} {
			out := p.stderr.String()
			if !strings.Contains(out, "proto="+proto+" status=403 reason=revoked ") && !idleClosedAlice.MatchString(out) {
				return "without a 403 or an idle-closed line for alice's " + proto + " connection:\n" + out
			}
		}
		return ""
	})
	if _, _, _, _, err := get(f.client(t, "alice"), url); err == nil || !strings.Contains(err.Error(), "bad certificate") {
		t.Errorf("a new connection of alice: %v; want a bad certificate alert", err)
	}
	if status, h, body, _, err := get(bob, url); err != nil || status != 200 || h.Get("X-Ssl-Client-Cn") != "bob" {
		t.Errorf("GET as bob after alice's revocation: %d %q %v", status, body, err)
	}
	p.waitLog(t, "handshake-refused remote=127.0.0.1:", "reason=revoked cn=alice ")
	status, body := plainGet(t, "http://"+p.metricsAddr+"/metrics")
	if want := crlNumber(t, f.dir); status != 200 || metricCRLNumber(body) != want {
		t.Errorf("/metrics: %d; want minica_proxy_crl_number %s in\n%s", status, want, body)
	}
}

var idleClosedAlice = regexp.MustCompile(`idle-closed remote=\S+ cn=alice `)

// With periodic reloads off, a revocation takes effect on SIGHUP, which
// also reopens the --access-log file (log rotation: rename, then SIGHUP).
func TestProxyProcessSIGHUP(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	accessLog := filepath.Join(t.TempDir(), "access.log")
	p := f.startProxy(t, "--reload-interval", "0", "--access-log", accessLog)
	url := "https://" + p.addr + "/"
	mustMinica(t, f.dir, "revoke", "alice")
	time.Sleep(200 * time.Millisecond)
	if status, _, body, _, err := get(f.client(t, "alice"), url); err != nil || status != 200 {
		t.Fatalf("GET as alice before SIGHUP: %d %q %v; want 200 (the CRL is not reloaded yet)", status, body, err)
	}
	requestLine := regexp.MustCompile(`(?m)^\S+ request remote=127\.0\.0\.1:\d+ cn=alice serial=[0-9A-F]+ days_left=\d+ method=GET uri=/ proto=HTTP/1\.1 status=200 latency=`)
	refusalLine := regexp.MustCompile(`(?m)^\S+ handshake-refused remote=127\.0\.0\.1:\d+ reason=revoked cn=alice `)
	waitFile(t, accessLog, requestLine)
	if err := os.Rename(accessLog, accessLog+".1"); err != nil {
		t.Fatal(err)
	}

	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice's new connection after SIGHUP", func() string {
		if _, _, _, _, err := get(f.client(t, "alice"), url); err == nil || !strings.Contains(err.Error(), "bad certificate") {
			return fmt.Sprintf("not refused (%v)", err)
		}
		return ""
	})
	waitFile(t, accessLog, refusalLine)
	if data, err := os.ReadFile(accessLog + ".1"); err != nil || refusalLine.Match(data) {
		t.Errorf("the rotated log after SIGHUP (%v):\n%s\nwant no line written after the reopen", err, data)
	}
	if got := p.stderr.String(); got != "" {
		t.Errorf("with --access-log, stderr holds %q; want nothing", got)
	}
}

// waitFile waits until file holds a line matching re.
func waitFile(t *testing.T, file string, re *regexp.Regexp) {
	t.Helper()
	eventually(t, file, func() string {
		data, err := os.ReadFile(file)
		if err != nil {
			return err.Error()
		}
		if !re.Match(data) {
			return fmt.Sprintf("without a line matching %s:\n%s", re, data)
		}
		return ""
	})
}

// A renewed server certificate under --server-cert NAME is served from the
// next reload on, and open connections stay up.
func TestProxyProcessServerCertRenewal(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	p := f.startProxy(t, "--reload-interval", "300ms")
	url := "https://" + p.addr + "/"
	alice := f.client(t, "alice")
	peerSerial := func(c *http.Client) (string, bool, error) {
		var reused bool
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", url, nil)
		resp, err := c.Do(req)
		if err != nil {
			return "", false, err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 {
			return "", reused, fmt.Errorf("status %d", resp.StatusCode)
		}
		return ca.SerialHex(resp.TLS.PeerCertificates[0].SerialNumber), reused, nil
	}
	before, _, err := peerSerial(alice)
	if err != nil {
		t.Fatal(err)
	}
	// Records keep issuance times to the second: renew in a later second
	// than the first certificate, so that "newest" is well defined.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
	mustMinica(t, f.dir, "issue", "server", "app", "--dns", "localhost", "--ip", "127.0.0.1", "--force")
	eventually(t, "the renewed certificate", func() string {
		serial, _, err := peerSerial(f.client(t, "alice"))
		if err != nil || serial == before {
			return fmt.Sprintf("serial %s (%v)", serial, err)
		}
		if _, err := os.Stat(filepath.Join(f.dir, "certs", "app", serial+".crt")); err != nil {
			return fmt.Sprintf("serial %s, not a certificate of app: %v", serial, err)
		}
		return ""
	})
	serial, reused, err := peerSerial(alice)
	if err != nil || !reused || serial != before {
		t.Errorf("the open connection after the renewal: serial %s (want %s), reused %v, %v", serial, before, reused, err)
	}
}

// A CA directory restored over its own path under a running proxy (the
// directory replaced, not its files) is found again by its path: while it
// is gone a reload of the certificate fails saying so, and keeps the
// certificate served; once restored, a server certificate renewed there
// is served from the next reload on.
func TestProxyProcessCADirRestored(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	backup := filepath.Join(t.TempDir(), "backup")
	if out, err := exec.Command("cp", "-a", f.dir, backup).CombinedOutput(); err != nil {
		t.Fatalf("backing up the CA: %v %s", err, out)
	}
	p := f.startProxy(t, "--reload-interval", "300ms")
	url := "https://" + p.addr + "/"
	alice := f.client(t, "alice")
	alice.Transport.(*http.Transport).DisableKeepAlives = true // a handshake each, to see the certificate served
	served := func() (string, error) {
		resp, err := alice.Get(url)
		if err != nil {
			return "", err
		}
		resp.Body.Close()
		return ca.SerialHex(resp.TLS.PeerCertificates[0].SerialNumber), nil
	}
	before, err := served()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(f.dir); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "reload-failed file=cert", "opening the replaced CA directory again", f.dir)
	if serial, err := served(); err != nil || serial != before {
		t.Fatalf("with the CA directory gone: serial %s (%v); want %s, the last good certificate", serial, err, before)
	}
	if out, err := exec.Command("cp", "-a", backup, f.dir).CombinedOutput(); err != nil {
		t.Fatalf("restoring the CA: %v %s", err, out)
	}
	// Records keep issuance times to the second (see
	// TestProxyProcessServerCertRenewal).
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
	mustMinica(t, f.dir, "issue", "server", "app", "--dns", "localhost", "--ip", "127.0.0.1", "--force")
	eventually(t, "the certificate renewed in the restored directory", func() string {
		serial, err := served()
		if err != nil || serial == before {
			return fmt.Sprintf("serial %s (%v)", serial, err)
		}
		if _, err := os.Stat(filepath.Join(f.dir, "certs", "app", serial+".crt")); err != nil {
			return fmt.Sprintf("serial %s, not a certificate of app: %v", serial, err)
		}
		return ""
	})
}

// SIGTERM stops accepting, lets an in-flight request finish, and exits 0.
// This proxy runs from files (--cert, --key, --ca, --crl), not from the CA
// directory.
func TestProxyProcessSIGTERM(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	p := f.startProxy(t, "--shutdown-timeout", "5s",
		"--cert", f.file(t, "app", ".chain.pem"), "--key", f.file(t, "app", ".key"),
		"--ca", filepath.Join(f.dir, "ca.crt"), "--crl", filepath.Join(f.dir, "crl.pem"))
	alice := f.client(t, "alice")
	type result struct {
		status int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		status, _, _, _, err := get(alice, "https://"+p.addr+"/slow")
		done <- result{status, err}
	}()
	select {
	case <-f.slowStarted:
	case <-time.After(5 * time.Second):
		t.Fatalf("the slow request did not reach the upstream\nstderr: %s", p.stderr)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, "new connections after SIGTERM", func() string {
		conn, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err != nil {
			return ""
		}
		conn.Close()
		return "accepted"
	})
	select {
	case r := <-done:
		t.Errorf("the in-flight request ended (%d %v) before the listener closed; want it still running", r.status, r.err)
		done <- r
	default:
	}
	r := <-done
	if r.err != nil || r.status != 200 {
		t.Errorf("in-flight request across SIGTERM: %d %v; want 200", r.status, r.err)
	}
	if code := p.waitExit(t, 5*time.Second); code != 0 {
		t.Errorf("minica proxy exited %d after SIGTERM; want 0\nstderr: %s", code, p.stderr)
	}
	log := p.stderr.String()
	if !strings.Contains(log, "uri=/slow proto=HTTP/1.1 status=200") || !strings.HasSuffix(log, "minica proxy: stopped\n") {
		t.Errorf("stderr:\n%s\nwant the /slow request logged and a final stopped line", log)
	}
}

func TestProxyGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	setProxyGCPercent(func(string) (string, bool) { return "", false })
	if got := debug.SetGCPercent(100); got != proxyGCPercent {
		t.Errorf("without GOGC: GC percent %d; want %d", got, proxyGCPercent)
	}
	setProxyGCPercent(func(name string) (string, bool) { return "50", name == "GOGC" })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set: GC percent changed to %d; want it left alone (100)", got)
	}
}

// TestProxyProcessLimitFlags checks that the handshake and body limits of
// the command line reach the proxy.
func TestProxyProcessLimitFlags(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	p := f.startProxy(t, "--max-handshakes", "2", "--max-handshakes-per-source", "1", "--body-timeout", "200ms", "--body-min-rate", "1000")

	idle, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	// The proxy resets the second at once, maybe before the dial returns.
	eventually(t, "a second idle connection of 127.0.0.1 refused", func() string {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			return ""
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(time.Second))
		var ne net.Error
		if _, err := c.Read(make([]byte, 1)); errors.As(err, &ne) && ne.Timeout() {
			return "kept open"
		}
		return ""
	})
	p.waitLog(t, "connections-shed", "reason=source-limit", "remote=127.0.0.1:")
	idle.Close()
	eventually(t, "the idle connection's handshake slot freed", func() string {
		if _, body := plainGet(t, "http://"+p.metricsAddr+"/metrics"); !strings.Contains(body, "\nminica_proxy_handshakes_in_progress 0\n") {
			return "in progress"
		}
		return ""
	})

	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		for range 100 {
			if _, err := pw.Write([]byte("x")); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		pw.Close()
	}()
	resp, err := f.client(t, "alice").Post("https://"+p.addr+"/", "text/plain", pr)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || string(body) != "request body too slow\n" {
		t.Errorf("trickling body: got %d %q; want 408 request body too slow", resp.StatusCode, body)
	}
	p.waitLog(t, "request ", "status=408", "reason=body-timeout")
}
