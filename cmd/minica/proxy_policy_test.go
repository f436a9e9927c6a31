package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
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
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func status(t *testing.T, c *http.Client, url string) string {
	resp, err := c.Get(url)
	if err != nil {
		return err.Error()
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.Status
}

// TestProxyProcessPolicy: `minica proxy --policy` routes by the file, picks
// up a changed file within the reload interval, keeps the last good policy
// when the new one is bad (logged once, counted), and reloads on SIGHUP.
func TestProxyProcessPolicy(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	file := filepath.Join(t.TempDir(), "front.json")
	f.writePolicy(t, file, `"alice"`)
	p := f.startPolicyProxy(t, file, "--reload-interval", "100ms")
	alice, bob := f.client(t, "alice"), f.client(t, "bob")
	base := "https://" + p.addr
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
	// A bad file keeps the last good policy.
	os.WriteFile(file, []byte(`{"routes": [{"host": "*", "path": "/app"}]}`), 0o644)
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
}

func TestProxyProcessPolicySIGHUP(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	file := filepath.Join(t.TempDir(), "front.json")
	f.writePolicy(t, file, `"alice"`)
	p := f.startPolicyProxy(t, file, "--reload-interval", "0")
	bob := f.client(t, "bob")
	url := "https://" + p.addr + "/app"
	f.writePolicy(t, file, `"alice", "bob"`)
	if got := status(t, bob, url); got != "403 Forbidden" {
		t.Fatalf("bob before SIGHUP: %s; want 403 (not reloaded yet)", got)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bob after SIGHUP", func() string {
		if got := status(t, bob, url); got != "200 OK" {
			return got
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
