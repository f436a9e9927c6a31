package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"minica/internal/atomicfile"
)

var policyListeningLine = regexp.MustCompile(`^minica proxy: listening on (127\.0\.0\.1:\d+), routing by the policy \S+, metrics on (127\.0\.0\.1:\d+)$`)

// startPolicyProxy runs minica proxy --policy file on free loopback ports.
func (f *proxyFixture) startPolicyProxy(t *testing.T, file string, args ...string) *proxyProc {
	t.Helper()
	args = append([]string{"proxy", "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--server-cert", "app", "--policy", file}, args...)
	cmd, stderr, exited, m := startListening(t, f.dir, policyListeningLine, args...)
	return &proxyProc{cmd: cmd, stderr: stderr, exited: exited, addr: m[1], metricsAddr: m[2]}
}

// writePolicy writes a policy of one route to the fixture's upstream for
// every host, under path, allowing the CNs; and a route refusing the rest.
func (f *proxyFixture) writePolicy(t *testing.T, file, cns string) {
	t.Helper()
	body := fmt.Sprintf(`{"routes": [
  {"host": "*", "path": "/app", "upstream": %q, "allow": {"cn": [%s]}},
  {"host": "*", "refuse": true}
]}`, f.upstream.URL, cns)
	// Atomically: the proxy polls the file, and must never read it half
	// written (an empty file is a bad policy, and one more reload failure).
	if err := atomicfile.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func status(t *testing.T, c *http.Client, url string) string {
	s, _ := statusConn(t, c, url)
	return s
}

// statusConn is status with the local address of the connection the
// request went on, to tell a kept connection from a new one.
func statusConn(t *testing.T, c *http.Client, url string) (status, local string) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(ci httptrace.GotConnInfo) { local = ci.Conn.LocalAddr().String() },
	}))
	resp, err := c.Do(req)
	if err != nil {
		return err.Error(), local
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.Status, local
}

// startPolicyFixture runs minica proxy --policy with a policy that allows
// the CNs cns on /app (see writePolicy), and args.
func startPolicyFixture(t *testing.T, cns string, args ...string) (*proxyFixture, string, *proxyProc) {
	t.Helper()
	f := newProxyFixture(t)
	file := filepath.Join(t.TempDir(), "front.json")
	f.writePolicy(t, file, cns)
	return f, file, f.startPolicyProxy(t, file, args...)
}

// TestProxyProcessPolicy: `minica proxy --policy` routes by the file, picks
// up a changed file within the reload interval, and keeps the last good
// policy when the new one is bad (logged once, counted); bob's keep-alive
// connection stays open through it all.
func TestProxyProcessPolicy(t *testing.T) {
	t.Parallel()
	f, file, p := startPolicyFixture(t, `"alice"`, "--reload-interval", "100ms")
	alice, bob := f.client(t, "alice"), f.client(t, "bob")
	base := "https://" + p.addr
	_, bobConn := statusConn(t, bob, base+"/app/x")
	sameConn := func(when string) {
		t.Helper()
		if got, conn := statusConn(t, bob, base+"/other"); conn != bobConn {
			t.Errorf("bob %s: %s on connection %s; want his first connection %s kept", when, got, conn, bobConn)
		}
	}
	for _, c := range []struct {
		client     *http.Client
		path, want string
	}{{alice, "/app/x", "200 OK"}, {bob, "/app/x", "403 Forbidden"}, {alice, "/other", "403 Forbidden"}} {
		if got := status(t, c.client, base+c.path); got != c.want {
			t.Errorf("GET %s: %s; want %s", c.path, got, c.want)
		}
	}
	// A changed file, no signal.
	f.writePolicy(t, file, `"bob"`)
	eventually(t, "bob after the policy changed", func() string {
		if got := status(t, bob, base+"/app/x"); got != "200 OK" {
			return got
		}
		return ""
	})
	p.waitLog(t, "policy-reload", "routes=2")
	sameConn("after the reload")
	// A bad file keeps the last good policy.
	if err := atomicfile.WriteFile(file, []byte(`{"routes": [{"host": "*", "path": "/app"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reload failure metric", func() string {
		if m := metricsText(t, p); !strings.Contains(m, `minica_proxy_reload_failures_total{file="policy"} 1`+"\n") {
			return "not counted"
		}
		return ""
	})
	if got := status(t, bob, base+"/app/x"); got != "200 OK" {
		t.Errorf("bob under the bad policy: %s; want 200 OK (the last good one)", got)
	}
	if n := strings.Count(p.stderr.String(), "reload-failed file=policy"); n != 1 {
		t.Errorf("%d reload-failed lines; want 1:\n%s", n, p.stderr.String())
	}
	sameConn("after the bad policy")
}

// TestProxyProcessPolicySIGHUP: without a reload interval, a changed
// policy takes effect on SIGHUP, on the connection bob already has open.
func TestProxyProcessPolicySIGHUP(t *testing.T) {
	t.Parallel()
	f, file, p := startPolicyFixture(t, `"alice"`, "--reload-interval", "0")
	bob := f.client(t, "bob")
	url := "https://" + p.addr + "/app"
	f.writePolicy(t, file, `"alice", "bob"`)
	got, bobConn := statusConn(t, bob, url)
	if got != "403 Forbidden" {
		t.Fatalf("bob before SIGHUP: %s; want 403 (not reloaded yet)", got)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bob after SIGHUP", func() string {
		if got, conn := statusConn(t, bob, url); got != "200 OK" || conn != bobConn {
			return got + " on " + conn + ", not " + bobConn
		}
		return ""
	})
}

func metricsText(t *testing.T, p *proxyProc) string {
	resp, err := http.Get("http://" + p.metricsAddr + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
