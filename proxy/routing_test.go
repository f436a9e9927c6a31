package proxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"minica/internal/testca"
)

// TestPolicyReload: a changed policy file is picked up by Reload (every
// ReloadInterval and on SIGHUP) while a request is under way; a bad one
// keeps the last good policy, is logged once and counted once.
func TestPolicyReload(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.json")
	release, arrived := make(chan struct{}), make(chan string, 2)
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			arrived <- r.Header.Get("X-Ssl-Client-Cn")
			<-release
		}
		io.WriteString(w, "up:"+r.URL.Path)
	})
	var upstream string
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(strings.ReplaceAll(body, "UP", upstream)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, func(c *Config) {
		upstream = c.Upstream
		c.Upstream, c.PolicyFile = "", file
		write(`{"routes": [{"host": "*", "upstream": "UP", "allow": {"cn": ["alice", "bob"]}}]}`)
	})
	e.upstream.Config.Handler = slow
	alice, aliceKey := e.ca.Client(t, "alice")
	bob, bobKey := e.ca.Client(t, "bob")
	ca, cb := e.client(alice, aliceKey, false), e.client(bob, bobKey, true)
	// Requests under way when the policy changes: bob's, still allowed,
	// finishes; alice's, refused now, is closed as a revoked client's is.
	type result struct {
		cn   string
		code int
		err  error
	}
	done := make(chan result, 2)
	for _, c := range []struct {
		cn     string
		client *http.Client
	}{{"alice", e.client(alice, aliceKey, false)}, {"bob", e.client(bob, bobKey, true)}} {
		go func() {
			resp, err := c.client.Get(e.url("/slow"))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				done <- result{c.cn, resp.StatusCode, nil}
				return
			}
			done <- result{c.cn, 0, err}
		}()
	}
	<-arrived
	<-arrived
	write(`{"routes": [{"host": "*", "upstream": "UP", "allow": {"cn": ["bob"]}}]}`)
	if err := e.p.Reload(); err != nil {
		t.Fatalf("Reload() error = %v", err)
	}
	e.waitLog("policy-reload", "routes=1")
	e.waitLog("exchange-closed", "cn=alice", "reason="+ReasonNotAllowed)
	close(release)
	for range 2 {
		r := <-done
		switch {
		case r.cn == "bob" && (r.err != nil || r.code != 200):
			t.Errorf("bob's request under way: %d %v; want 200", r.code, r.err)
		case r.cn == "alice" && r.err == nil && r.code == 200:
			t.Errorf("alice's request under way: 200; want it closed")
		}
	}
	if code, _ := e.get(cb, "/", nil); code != 200 {
		t.Fatalf("bob after the reload: %d; want 200", code)
	}
	if code, _ := e.get(ca, "/", nil); code != 403 {
		t.Fatalf("alice after the reload: %d; want 403", code)
	}
	// A bad policy keeps the last good one: logged and counted once, however
	// many reloads see it.
	write(`{"routes": [{"host": "*", "upstream": "UP"}]}`)
	for range 3 {
		err := e.p.Reload()
		var re *ReloadError
		if err != nil && (!errors.As(err, &re) || re.File != "policy") {
			t.Fatalf("Reload() error = %v; want a policy ReloadError", err)
		}
	}
	if n := strings.Count(e.log.String(), "reload-failed file=policy"); n != 1 {
		t.Errorf("%d reload-failed lines; want 1:\n%s", n, e.log.String())
	}
	e.waitLog("reload-failed file=policy", `route 1 (host \"*\", path \"/\"): no rule`)
	var m bytes.Buffer
	e.p.writeMetrics(&m)
	if !strings.Contains(m.String(), `minica_proxy_reload_failures_total{file="policy"} 1`+"\n") {
		t.Errorf("metrics:\n%s", m.String())
	}
	if code, _ := e.get(cb, "/", nil); code != 200 {
		t.Fatalf("bob after the bad policy: %d; want 200 (the last good policy)", code)
	}
	// A missing file too; then a good one again.
	os.Remove(file)
	e.p.Reload()
	e.waitLog("reload-failed file=policy", "no such file")
	write(`{"routes": [{"host": "*", "upstream": "UP", "allow": {"cn": ["alice"]}}]}`)
	if err := e.p.Reload(); err != nil {
		t.Fatalf("Reload() error = %v", err)
	}
	if code, _ := e.get(ca, "/", nil); code != 200 {
		t.Fatalf("alice after the good policy: %d; want 200", code)
	}
}

func TestPolicyConfigExcludesUpstream(t *testing.T) {
	for _, cfg := range []Config{
		{PolicyFile: "p.json", Upstream: "http://127.0.0.1:1"},
		{PolicyFile: "p.json", AllowCN: []string{"a"}},
	} {
		if _, err := configUpstream(&cfg); err == nil || err.Error() != "config: PolicyFile excludes Upstream, UpstreamRootCAs and the Allow lists" {
			t.Errorf("configUpstream(%+v) error = %v", cfg, err)
		}
	}
}

// TestPolicyReloadKeepsUpstreams: a reload keeps the ReverseProxy (and its
// upstream connections) of an upstream it still has, with the same CA
// bytes, and makes a new one when the CA file changed.
func TestPolicyReloadKeepsUpstreams(t *testing.T) {
	dir := t.TempDir()
	file, caFile := filepath.Join(dir, "policy.json"), filepath.Join(dir, "up.pem")
	os.WriteFile(caFile, testca.New(t, "Upstream CA").PEM(), 0o644)
	write := func(cns string) {
		os.WriteFile(file, []byte(`{"routes": [
  {"host": "a.example", "upstream": "https://127.0.0.1:1", "upstream_ca": "up.pem", "allow": {"cn": [`+cns+`]}},
  {"host": "b.example", "upstream": "https://127.0.0.1:1", "upstream_ca": "up.pem", "allow": {"any": true}}]}`), 0o644)
	}
	write(`"alice"`)
	e := newEnv(t, func(c *Config) { c.Upstream, c.PolicyFile = "", file })
	first := e.p.routing.Load()
	if first.rps[0] != first.rps[1] {
		t.Fatal("two routes of one upstream have two ReverseProxies")
	}
	write(`"bob"`)
	e.p.Reload()
	second := e.p.routing.Load()
	if second == first || second.rps[0] != first.rps[0] {
		t.Fatalf("after a rule change: routing %p -> %p, proxy %p -> %p; want a new routing, the same proxy", first, second, first.rps[0], second.rps[0])
	}
	os.WriteFile(caFile, testca.New(t, "Other Upstream CA").PEM(), 0o644)
	e.p.Reload()
	if third := e.p.routing.Load(); third.rps[0] == second.rps[0] {
		t.Error("a changed upstream CA kept the old ReverseProxy")
	}
	// Nothing changed: the policy is not compiled again.
	same := e.p.routing.Load()
	e.p.Reload()
	if e.p.routing.Load() != same {
		t.Error("an unchanged policy was swapped")
	}
}
