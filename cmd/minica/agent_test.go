package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"minica/formats"
)

// The tests of this file run `minica agent` against `minica serve` and
// `minica proxy`, all real processes on 127.0.0.1.

// agentProc is a running `minica agent`.
type agentProc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	exited chan error
}

func startAgent(t *testing.T, env []string, args ...string) *agentProc {
	t.Helper()
	p := &agentProc{stderr: &syncBuffer{}, exited: make(chan error, 1)}
	p.cmd = exec.Command("minica", append([]string{"agent"}, args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr, p.cmd.Stdout = p.stderr, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// count returns how many log lines of the agent hold event.
func (p *agentProc) count(event string) int {
	return strings.Count(p.stderr.String(), " "+event+" ")
}

// freeAddr returns a loopback address with a port free right now, for a
// serve that is restarted on the same port.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// copyFile copies src to dst with mode perm.
func copyFile(t *testing.T, src, dst string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(dst, readTestFile(t, src), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dst, perm); err != nil {
		t.Fatal(err)
	}
}

// readPair reads a certificate and key as a service would before each
// request. The agent replaces the two files one after the other, so a
// reader between the two renames sees a pair that does not match: it
// reads again (a service reloads on --exec, after both).
func readPair(t *testing.T, certFile, keyFile string) (tls.Certificate, int) {
	t.Helper()
	for i := range 50 {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err == nil {
			return pair, i
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the certificate %s and key %s did not match for 250ms", certFile, keyFile)
	return tls.Certificate{}, 0
}

// TestAgentProcessShortLived is the short-lived certificate end to end: a
// client certificate issued for 10 minutes, kept fresh by `minica agent`
// through `minica serve`'s POST /renew, reaches `minica proxy` for an
// hour without one request refused, while serve is killed and restarted
// twice. Every process runs on one clock that goes 72 times faster than
// real time (MINICA_TEST_CLOCK: the CA's dates, serve's judgement, the
// proxy's verification and the agent's timers), so the hour takes 50s;
// the code is the code of real time. The client reads the certificate
// files before each request, as a service that reloads them would; the
// proxy knows nothing of the agent.
func TestAgentProcessShortLived(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 50s")
	}
	// Parallel: the test mostly waits, for the clock hour to pass.
	t.Parallel()
	const speed = 72
	clock := fmt.Sprintf("%d*%d", time.Now().UnixNano(), speed)
	env := []string{"MINICA_TEST_CLOCK=" + clock}
	// Every process of the test runs on that clock: these shadow the
	// package's helpers with ones that pass it.
	mustMinica := func(t *testing.T, dir string, args ...string) string {
		t.Helper()
		return mustMinicaWithEnv(t, env, dir, args...)
	}
	minica := func(t *testing.T, dir string, args ...string) (string, string, int) {
		t.Helper()
		return minicaWithEnv(t, env, dir, args...)
	}
	startServe := func(t *testing.T, dir string, args ...string) *serveProc {
		t.Helper()
		return startServeWithEnv(t, env, dir, args...)
	}
	now, _ := scaledClock(clock)
	start := now()
	dir := filepath.Join(t.TempDir(), "ca")
	mustMinica(t, dir, "init", "--cn", "Test Root", "--no-password")
	mustMinica(t, dir, "issue", "server", "pki", "--dns", "localhost", "--ip", "127.0.0.1")
	mustMinica(t, dir, "issue", "server", "app", "--dns", "localhost", "--ip", "127.0.0.1")
	mustMinica(t, dir, "issue", "client", "svc", "--email", "svc@example.com", "--validity", "10m")
	svc := t.TempDir()
	certFile, keyFile, chainFile := filepath.Join(svc, "svc.crt"), filepath.Join(svc, "svc.key"), filepath.Join(svc, "chain.pem")
	copyFile(t, filepath.Join(dir, "certs", "svc", "current.crt"), certFile, 0o640)
	copyFile(t, filepath.Join(dir, "certs", "svc", "current.key"), keyFile, 0o600)

	addr := freeAddr(t)
	serveArgs := []string{"--listen", "", "--listen-tls", addr, "--server-cert", "pki"}
	srv := startServe(t, dir, serveArgs...)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	t.Cleanup(upstream.Close)
	_, proxyLog, _, m := startListeningWithEnv(t, env, dir, listeningLine, "proxy", "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0",
		"--upstream", upstream.URL, "--server-cert", "app")
	proxyURL := "https://" + m[1] + "/"
	ag := startAgent(t, env, "--url", "https://"+addr, "--ca", filepath.Join(dir, "ca.crt"), "--cert", certFile, "--key", keyFile,
		"--chain", chainFile, "--exec", "true")

	roots := x509.NewCertPool()
	roots.AddCert(caCert(t, dir))
	serials := map[string]bool{}
	requests, rereads, restarts := 0, 0, 0
	renewedAtKill := -1
	for now().Sub(start) < time.Hour {
		pair, n := readPair(t, certFile, keyFile)
		rereads += n
		leaf, _ := x509.ParseCertificate(pair.Certificate[0])
		serials[fmt.Sprintf("%x", leaf.SerialNumber)] = true
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, Time: now}}}
		resp, err := client.Get(proxyURL)
		if err != nil {
			t.Fatalf("request %d at +%s with serial %x (not after +%s): %v\nagent:\n%s\nproxy:\n%s", requests, now().Sub(start).Round(time.Second),
				leaf.SerialNumber, leaf.NotAfter.Sub(start).Round(time.Second), err, ag.stderr, proxyLog)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d at +%s = %d; want 200\nproxy:\n%s", requests, now().Sub(start).Round(time.Second), resp.StatusCode, proxyLog)
		}
		requests++
		// Twice, right after a renewal, serve is killed; once the next
		// renewal has failed for it, serve is started again on the same
		// port (how long that takes decides the downtime).
		elapsed := now().Sub(start)
		if restarts < 2 && elapsed > time.Duration(restarts+1)*18*time.Minute && renewedAtKill < 0 {
			renewedAtKill = ag.count("agent-renewed")
		}
		if renewedAtKill >= 0 && ag.count("agent-renewed") > renewedAtKill {
			failed := ag.count("agent-renew-failed")
			srv.cmd.Process.Kill()
			srv.exited <- <-srv.exited // for the cleanup, which waits too
			eventually(t, "a renewal failing while serve is down", func() string {
				if ag.count("agent-renew-failed") > failed {
					return ""
				}
				return ag.stderr.String()
			})
			srv = startServe(t, dir, serveArgs...)
			restarts++
			renewedAtKill = -1
		}
		time.Sleep(150 * time.Millisecond)
	}
	renewed := ag.count("agent-renewed")
	t.Logf("%d requests over a clock hour, %d certificates, %d renewals, %d failed attempts while serve was down, %d re-reads of a torn pair",
		requests, len(serials), renewed, ag.count("agent-renew-failed"), rereads)
	if restarts != 2 {
		t.Errorf("serve was restarted %d times; want 2", restarts)
	}
	// A 10-minute certificate lives 5 minutes past its issuance (the CA
	// backdates notBefore 5 minutes) and is due 1.6 minutes after it: an
	// hour needs more than 20 renewals.
	if renewed < 20 || len(serials) < 20 {
		t.Errorf("%d renewals and %d certificates seen in an hour; want at least 20", renewed, len(serials))
	}
	if got := ag.count("agent-exec"); got != renewed {
		t.Errorf("--exec ran %d times for %d renewals", got, renewed)
	}
	for file, want := range map[string]os.FileMode{certFile: 0o640, keyFile: 0o600, chainFile: 0o644} {
		if info, err := os.Stat(file); err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", file, info.Mode().Perm(), err, want)
		}
	}
	if chain, err := formats.ParseCertificates(readTestFile(t, chainFile)); err != nil || len(chain) != 1 || !chain[0].Equal(caCert(t, dir)) {
		t.Errorf("the chain file holds %d certificates (%v); want the CA", len(chain), err)
	}
	if _, err := os.Stat(keyFile + ".next"); !os.IsNotExist(err) {
		t.Errorf("a pending key was left behind: %v", err)
	}
	// serve recorded each renewal with who asked.
	if !regexp.MustCompile(` renewed name=svc serial=[0-9a-f]+ old_serial=[0-9a-f]+ .*client=127\.0\.0\.1:\d+ subject=`).MatchString(srv.stderr.String()) {
		t.Errorf("serve's log has no renewal line:\n%s", srv.stderr)
	}
	list := mustMinica(t, dir, "list", "--json")
	if n := strings.Count(list, `"renewal_of"`); n < renewed {
		t.Errorf("the database links %d renewals; the agent made %d", n, renewed)
	}
	ag.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-ag.exited:
		if err != nil || !strings.Contains(ag.stderr.String(), "minica agent: stopped") {
			t.Errorf("agent after SIGTERM: %v\n%s", err, ag.stderr)
		}
		ag.exited <- err
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not stop within 10s of SIGTERM")
	}

	// Had the first certificate been stolen, its thief could have renewed
	// it as the agent did: revoking it for keyCompromise revokes every
	// certificate the agent renewed from it, down to the one it holds.
	var first string
	for line := range strings.Lines(list) {
		if strings.Contains(line, `"name":"svc"`) && !strings.Contains(line, `"renewal_of"`) {
			first = regexp.MustCompile(`"serial":"([0-9a-f]+)"`).FindStringSubmatch(line)[1]
		}
	}
	out := mustMinica(t, dir, "revoke", first, "--reason", "keyCompromise")
	if n := strings.Count(out, "(keyCompromise), renewed from serial "); n < renewed {
		t.Errorf("revoking the first certificate revoked %d successors; the agent renewed %d times\n%s", n, renewed, out)
	}
	if out, _, code := minica(t, dir, "verify", certFile); code != 1 || !strings.Contains(out, "revoked") {
		t.Errorf("verify of the agent's certificate after revoking the first one for keyCompromise: exit %d\n%s; want revoked", code, out)
	}
}

// An agent whose certificate serve refuses exits 1 at once, saying why:
// revoked, or of another CA.
func TestAgentProcessRefused(t *testing.T) {
	t.Parallel()
	dir := newCADir(t)
	mustMinica(t, dir, "issue", "server", "pki", "--dns", "localhost", "--ip", "127.0.0.1")
	mustMinica(t, dir, "issue", "client", "gone", "--email", "gone@example.com")
	mustMinica(t, dir, "revoke", "gone")
	other := newCADir(t)
	mustMinica(t, other, "issue", "client", "stranger", "--email", "s@example.com")
	srv := startServe(t, dir, "--listen", "", "--listen-tls", "127.0.0.1:0", "--server-cert", "pki")
	tests := []struct {
		name, ca, certs string
		wantErr         string
		wantHint        string
	}{
		{"revoked", dir, "gone", `minica: error: the certificate ".*" is revoked: serve refused the renewal: 403 revoked: serial [0-9a-f]+ revoked at`,
			"a revoked certificate cannot renew itself"},
		{"another CA", other, "stranger", `minica: error: serve refused the renewal: 403 unknown-ca: `,
			"serve will refuse this certificate every time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work := t.TempDir()
			cert, key := filepath.Join(work, "c.crt"), filepath.Join(work, "c.key")
			copyFile(t, filepath.Join(tt.ca, "certs", tt.certs, "current.crt"), cert, 0o644)
			copyFile(t, filepath.Join(tt.ca, "certs", tt.certs, "current.key"), key, 0o600)
			before := readTestFile(t, cert)
			_, stderr, code := minica(t, dir, "agent", "--once", "--renew-at", "0", "--url", srv.bases[0],
				"--ca", filepath.Join(dir, "ca.crt"), "--cert", cert, "--key", key)
			if code != 1 || !regexp.MustCompile(tt.wantErr).MatchString(stderr) || !strings.Contains(stderr, "minica: hint: "+tt.wantHint) {
				t.Fatalf("agent exit %d\n%s\nwant 1, %q and the hint %q", code, stderr, tt.wantErr, tt.wantHint)
			}
			if string(readTestFile(t, cert)) != string(before) {
				t.Error("the certificate file changed")
			}
			if _, err := os.Stat(key + ".next"); !os.IsNotExist(err) {
				t.Errorf("a pending key was left behind: %v", err)
			}
		})
	}
}
