package main

import (
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// crlHTTP is a test server on 127.0.0.1 that answers /crl.der with what
// its handler of the moment does.
type crlHTTP struct {
	mu sync.Mutex
	h  http.HandlerFunc
}

func (s *crlHTTP) set(h http.HandlerFunc) {
	s.mu.Lock()
	s.h = h
	s.mu.Unlock()
}

func (s *crlHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	h(w, r)
}

// serveBytes answers 200 with data, and 304 to a request holding it.
func serveBytes(data []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pkix-crl")
		http.ServeContent(w, r, "crl.der", time.Time{}, strings.NewReader(string(data)))
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// metricsBody returns the proxy's /metrics.
func (p *proxyProc) metricsBody(t *testing.T) string {
	t.Helper()
	_, body := plainGet(t, "http://"+p.metricsAddr+"/metrics")
	return body
}

// A proxy following a CRL URL picks up a revocation at the next poll, and
// every bad answer of the URL keeps the last good CRL, logged and counted
// with its reason (issue 14, points 6 and 10).
func TestProxyProcessCRLURLFaults(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	first := readFile(t, filepath.Join(f.dir, "crl.der"))
	src := &crlHTTP{h: serveBytes(first)}
	srv := httptest.NewServer(src)
	defer srv.Close()
	cache := filepath.Join(t.TempDir(), "crl.cache")
	p := f.startProxy(t, "--crl", srv.URL+"/crl.der", "--crl-refresh", "200ms", "--crl-timeout", "1s",
		"--crl-cache", cache, "--reload-interval", "0")
	url := "https://" + p.addr + "/"
	alice, bob := f.client(t, "alice"), f.client(t, "bob")
	for name, c := range map[string]*http.Client{"alice": alice, "bob": bob} {
		if status, _, body, _, err := get(c, url); err != nil || status != 200 {
			t.Fatalf("GET as %s: %d %q %v", name, status, body, err)
		}
	}

	// A revocation reaches the proxy at its next poll.
	mustMinica(t, f.dir, "revoke", "bob")
	second := readFile(t, filepath.Join(f.dir, "crl.der"))
	src.set(serveBytes(second))
	p.waitLog(t, "reload crl_number="+crlNumber(t, f.dir))
	if _, _, _, _, err := get(f.client(t, "bob"), url); err == nil {
		t.Fatal("bob got through after his revocation")
	}
	eventually(t, "the CRL cache", func() string {
		if data, _ := os.ReadFile(cache); string(data) != string(second) {
			return "not the new CRL"
		}
		return ""
	})

	other := newCADir(t)
	future := filepath.Join(t.TempDir(), "ca")
	if out, err := exec.Command("cp", "-a", f.dir, future).CombinedOutput(); err != nil {
		t.Fatalf("copying the CA: %v %s", err, out)
	}
	cmd := exec.Command("minica", "crl")
	cmd.Env = append(os.Environ(), "MINICA_DIR="+future, "MINICA_TEST_NOW="+time.Now().Add(2*time.Hour).UTC().Format(time.RFC3339))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("minica crl in the future: %v %s", err, out)
	}
	// A CRL of the CA with a higher number, signed with a clock a month
	// behind: past its nextUpdate already.
	past := filepath.Join(t.TempDir(), "ca")
	if out, err := exec.Command("cp", "-a", f.dir, past).CombinedOutput(); err != nil {
		t.Fatalf("copying the CA: %v %s", err, out)
	}
	cmd = exec.Command("minica", "crl")
	cmd.Env = append(os.Environ(), "MINICA_DIR="+past, "MINICA_TEST_NOW="+time.Now().Add(-30*24*time.Hour).UTC().Format(time.RFC3339))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("minica crl in the past: %v %s", err, out)
	}
	der := func(name string) []byte { return readFile(t, name) }
	faults := []struct {
		name, reason string
		h            http.HandlerFunc
	}{
		{"garbage", "malformed", serveBytes([]byte("\x00\x01garbage\xff"))},
		{"truncated CRL", "malformed", serveBytes(second[:len(second)-10])},
		{"older CRL number (replay)", "older-number", serveBytes(first)},
		{"another CA's CRL", "wrong-issuer", serveBytes(der(filepath.Join(other, "crl.der")))},
		{"thisUpdate in the future", "future-this-update", serveBytes(der(filepath.Join(future, "crl.der")))},
		{"expired CRL with a higher number", "expired", serveBytes(der(filepath.Join(past, "crl.der")))},
		{"HTML error page", "malformed", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html><body><h1>Service Unavailable</h1></body></html>\n")
		}},
		{"404", "http-status", http.NotFound},
		{"500", "http-status", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }},
		{"never-ending response", "timeout", func(w http.ResponseWriter, r *http.Request) {
			w.Write(second[:10])
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}},
		{"100 MiB body", "too-large", func(w http.ResponseWriter, r *http.Request) {
			chunk := make([]byte, 1<<20)
			for range 100 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}},
	}
	want := crlNumber(t, f.dir)
	for _, fault := range faults {
		before := strings.Count(p.stderr.String(), "crl-fetch-failed reason="+fault.reason+" ")
		src.set(fault.h)
		// A 100 MiB body takes its time under the race detector on a busy
		// machine: a bound of its own.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if n := strings.Count(p.stderr.String(), "crl-fetch-failed reason="+fault.reason+" "); n > before {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no crl-fetch-failed line with reason=%s within 30s:\n%s", fault.name, fault.reason, p.stderr)
			}
		}
		body := p.metricsBody(t)
		if !strings.Contains(body, fmt.Sprintf("minica_proxy_crl_fetch_failures_total{reason=%q} ", fault.reason)) {
			t.Errorf("%s: metrics lack the failure of reason %s:\n%s", fault.name, fault.reason, body)
		}
		if got := metricCRLNumber(body); got != want {
			t.Errorf("%s: CRL number %s in use; want %s kept", fault.name, got, want)
		}
		if status, _, _, _, err := get(alice, url); err != nil || status != 200 {
			t.Errorf("%s: alice got %d %v; want 200", fault.name, status, err)
		}
		if _, _, _, _, err := get(f.client(t, "bob"), url); err == nil {
			t.Errorf("%s: bob got through", fault.name)
		}
	}
	if !strings.Contains(p.metricsBody(t), "minica_proxy_crl_last_fetch_success_seconds ") {
		t.Error("metrics lack the last fetch success time")
	}

	// An https URL whose certificate does not verify: a second replica
	// starts from the cache the first one wrote, and keeps failing with
	// reason tls; verified with --crl-ca, it follows the URL.
	tlsSrv := httptest.NewUnstartedServer(serveBytes(second))
	tlsSrv.Config.ErrorLog = nil
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	q := f.startProxy(t, "--crl", tlsSrv.URL+"/crl.der", "--crl-refresh", "200ms", "--crl-cache", cache)
	q.waitLog(t, "starting from the cached CRL")
	q.waitLog(t, "crl-fetch-failed reason=tls ", "certificate")
	if _, _, _, _, err := get(f.client(t, "bob"), "https://"+q.addr+"/"); err == nil {
		t.Error("bob got through the replica started from the cache")
	}
	if status, _, _, _, err := get(f.client(t, "alice"), "https://"+q.addr+"/"); err != nil || status != 200 {
		t.Errorf("alice on the replica started from the cache: %d %v", status, err)
	}
	caFile := filepath.Join(t.TempDir(), "crl-server.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	r := f.startProxy(t, "--crl", tlsSrv.URL+"/crl.der", "--crl-ca", caFile)
	if status, _, _, _, err := get(f.client(t, "alice"), "https://"+r.addr+"/"); err != nil || status != 200 {
		t.Errorf("alice with --crl-ca: %d %v", status, err)
	}
	if strings.Contains(r.stderr.String(), "crl-fetch-failed") {
		t.Errorf("--crl-ca: fetch failures logged:\n%s", r.stderr)
	}
}

// A proxy following `minica serve` by its long poll refuses a client
// revoked by `minica revoke` in another process at once: --crl-refresh is
// an hour, so only the long poll can bring the CRL (issue 14, point 6).
func TestProxyProcessFollowsServe(t *testing.T) {
	t.Parallel()
	testProxyFollowsServe(t, false)
}

// The same with delta CRLs from the first entry: after the complete CRL it
// starts with, the proxy is sent deltas only (serve's metrics count one
// complete CRL sent), and a hold lifted by removeFromCRL lets its client
// through again (issue 34, point 2).
func TestProxyProcessFollowsServeDeltas(t *testing.T) {
	t.Parallel()
	f, s, p := testProxyFollowsServe(t, true)
	url := "https://" + p.addr + "/"
	mustMinica(t, f.dir, "issue", "client", "frank")
	waitLongPoll(t, s)
	mustMinica(t, f.dir, "revoke", "frank", "--reason", "certificateHold")
	waitRefused(t, f, s, p, "frank")
	waitLongPoll(t, s)
	mustMinica(t, f.dir, "revoke", "frank", "--reason", "removeFromCRL")
	eventually(t, "frank let through after the hold is lifted", func() string {
		if status, _, _, _, err := get(f.client(t, "frank"), url); err != nil || status != 200 {
			return fmt.Sprintf("%d %v", status, err)
		}
		return ""
	})
	_, body := s.fetch(t, "/metrics")
	for _, want := range []string{`minica_serve_crl_answers_total{kind="complete"} 1` + "\n", `minica_serve_crl_answers_total{kind="delta"} `} {
		if !strings.Contains(string(body), want) {
			t.Errorf("serve's metrics lack %q:\n%s", want, body)
		}
	}
	if strings.Contains(p.stderr.String(), "crl-fetch-failed") {
		t.Errorf("the proxy logged failed fetches:\n%s", p.stderr)
	}
}

// testProxyFollowsServe revokes three clients one by one and waits until
// the proxy refuses each, alice staying let through; with deltas, the CA
// signs delta CRLs from the first entry.
func testProxyFollowsServe(t *testing.T, deltas bool) (*proxyFixture, *serveProc, *proxyProc) {
	f := newProxyFixture(t)
	names := []string{"carol", "dave", "erin"}
	for _, n := range names {
		mustMinica(t, f.dir, "issue", "client", n)
	}
	if deltas {
		mustMinica(t, f.dir, "crl", "delta", "--from", "-1")
		mustMinica(t, f.dir, "crl")
	}
	s := startServe(t, f.dir)
	p := f.startProxy(t, "--crl", s.base+"/crl.der", "--crl-refresh", "1h", "--reload-interval", "0")
	url := "https://" + p.addr + "/"
	alice := f.client(t, "alice")
	for _, n := range names {
		if status, _, body, _, err := get(f.client(t, n), url); err != nil || status != 200 {
			t.Fatalf("GET as %s: %d %q %v", n, status, body, err)
		}
	}
	for _, n := range names {
		waitLongPoll(t, s)
		out := mustMinica(t, f.dir, "revoke", n)
		if deltas != strings.Contains(out, "published delta CRL") {
			t.Errorf("minica revoke %s said %q; want a delta CRL published: %v", n, out, deltas)
		}
		waitRefused(t, f, s, p, n)
		if status, _, _, _, err := get(alice, url); err != nil || status != 200 {
			t.Errorf("alice after %s's revocation: %d %v", n, status, err)
		}
	}
	if strings.Contains(p.stderr.String(), "crl-fetch-failed") {
		t.Errorf("the proxy logged failed fetches:\n%s", p.stderr)
	}
	return f, s, p
}

// waitRefused waits, at most 10 s, until the proxy refuses the client
// named name.
func waitRefused(t *testing.T, f *proxyFixture, s *serveProc, p *proxyProc, name string) {
	t.Helper()
	waitRefusedFor(t, f, s, p, name, 10*time.Second, "minica revoke returned")
}

// waitRefusedFor waits, at most d, until the proxy refuses the client
// named name; since names the moment the wait starts from.
func waitRefusedFor(t *testing.T, f *proxyFixture, s *serveProc, p *proxyProc, name string, d time.Duration, since string) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(d)
	for {
		if _, _, _, _, err := get(f.client(t, name), "https://"+p.addr+"/"); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still let through %s after %s\nproxy: %s\nserve: %s", name, d, since, p.stderr, s.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%s refused %s after %s", name, time.Since(start).Round(time.Millisecond), since)
}

// restartServe kills serve s, listening on addr, and waits until the
// proxy p logs that it cannot reach it; it calls down, then starts serve
// again on addr and waits, at most 15 s, until p refuses the client named
// name. It returns the new serve.
func restartServe(t *testing.T, f *proxyFixture, s *serveProc, p *proxyProc, addr, name string, down func()) *serveProc {
	t.Helper()
	s.cmd.Process.Kill()
	<-s.exited
	s.exited <- nil // for the cleanup
	p.waitLog(t, "crl-fetch-failed reason=connect ", "connection refused")
	down()
	s = serveAt(t, f.dir, addr)
	waitRefusedFor(t, f, s, p, name, 15*time.Second, "serve came back")
	return s
}

// waitLongPoll waits, a bounded time, until a long poll waits at serve.
func waitLongPoll(t *testing.T, s *serveProc) {
	t.Helper()
	eventually(t, "serve's long polls", func() string {
		_, body := s.fetch(t, "/metrics")
		if !strings.Contains(string(body), "minica_serve_long_polls 1") {
			return "none waiting"
		}
		return ""
	})
}

// While serve is down the proxy keeps its last good CRL, logs and counts
// the failed fetches and retries; once serve is back (same address) it
// follows it again, with no restart of its own (issue 14, point 10).
func TestProxyProcessServeKilledAndRestarted(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	addr := freeAddr(t)
	s := startServe(t, f.dir, "--listen", addr)
	p := f.startProxy(t, "--crl", s.base+"/crl.der", "--crl-refresh", "2s", "--reload-interval", "0")
	url := "https://" + p.addr + "/"
	waitLongPoll(t, s)

	// The CA revokes bob while serve is down; serve comes back and the
	// proxy, retrying, gets the new CRL.
	restartServe(t, f, s, p, addr, "bob", func() {
		if status, _, _, _, err := get(f.client(t, "alice"), url); err != nil || status != 200 {
			t.Fatalf("alice while serve is down: %d %v; want 200 on the last good CRL", status, err)
		}
		if body := p.metricsBody(t); !strings.Contains(body, `minica_proxy_crl_fetch_failures_total{reason="connect"} `) {
			t.Errorf("metrics lack the connect failures:\n%s", body)
		}
		mustMinica(t, f.dir, "revoke", "bob")
	})
	if status, _, _, _, err := get(f.client(t, "alice"), url); err != nil || status != 200 {
		t.Errorf("alice after serve came back: %d %v", status, err)
	}
}

// Serve restarted between two deltas (issue 34, point 6): the proxy,
// following serve with deltas on, gets the delta of a revocation signed
// while serve was down from the new serve process, without a restart of
// its own, and that process sends it the delta, never the complete CRL:
// the proxy still holds the base the delta is against.
func TestProxyProcessServeRestartedBetweenDeltas(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	for _, n := range []string{"carol", "dave"} {
		mustMinica(t, f.dir, "issue", "client", n)
	}
	mustMinica(t, f.dir, "crl", "delta", "--from", "-1")
	mustMinica(t, f.dir, "crl")
	addr := freeAddr(t)
	s := startServe(t, f.dir, "--listen", addr)
	p := f.startProxy(t, "--crl", s.base+"/crl.der", "--crl-refresh", "2s", "--reload-interval", "0")
	url := "https://" + p.addr + "/"
	revokeDelta := func(name string) {
		t.Helper()
		if out := mustMinica(t, f.dir, "revoke", name); !strings.Contains(out, "published delta CRL") {
			t.Fatalf("minica revoke %s said %q; want a delta CRL published", name, out)
		}
	}
	waitLongPoll(t, s)
	revokeDelta("carol")
	waitRefused(t, f, s, p, "carol")

	s = restartServe(t, f, s, p, addr, "dave", func() { revokeDelta("dave") })
	for _, n := range []string{"alice", "bob"} {
		if status, _, _, _, err := get(f.client(t, n), url); err != nil || status != 200 {
			t.Errorf("%s after serve came back: %d %v", n, status, err)
		}
	}
	if _, _, _, _, err := get(f.client(t, "carol"), url); err == nil {
		t.Error("carol, revoked before the restart, let through after it")
	}
	_, body := s.fetch(t, "/metrics")
	for _, want := range []string{`minica_serve_crl_answers_total{kind="complete"} 0` + "\n", `minica_serve_crl_answers_total{kind="delta"} 1` + "\n"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the restarted serve's metrics lack %q:\n%s", want, body)
		}
	}
	if strings.Contains(p.stderr.String(), "crl-fetch-failed reason=refused") {
		t.Errorf("the proxy refused a CRL:\n%s", p.stderr)
	}
}
