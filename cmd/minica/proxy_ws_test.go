package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsUpstream is a WebSocket server (github.com/coder/websocket) that sends,
// as its first message, the JSON of the upgrade request's headers, then
// echoes every message until the connection ends.
func wsUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		hdr, _ := json.Marshal(r.Header)
		if c.Write(ctx, websocket.MessageText, hdr) != nil {
			return
		}
		for range 1000 {
			typ, msg, err := c.Read(ctx)
			if err != nil {
				return
			}
			if c.Write(ctx, typ, msg) != nil {
				return
			}
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// dialWS opens a WebSocket through the proxy at addr as name, sending hdr
// with the upgrade request, and returns it with the headers the upstream
// saw.
func (f *proxyFixture) dialWS(t *testing.T, addr, name string, hdr http.Header) (*websocket.Conn, http.Header) {
	t.Helper()
	hc := f.newClient(t, name, false)
	hc.Timeout = 0 // the socket outlives any client timeout; contexts bound the test
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "wss://"+addr+"/ws", &websocket.DialOptions{HTTPClient: hc, HTTPHeader: hdr})
	if err != nil {
		t.Fatalf("WebSocket as %s: %v", name, err)
	}
	t.Cleanup(func() { c.CloseNow() })
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("WebSocket as %s: status %d; want 101", name, resp.StatusCode)
	}
	_, msg, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("WebSocket as %s: reading the upstream's first message: %v", name, err)
	}
	var seen http.Header
	if err := json.Unmarshal(msg, &seen); err != nil {
		t.Fatalf("WebSocket as %s: first message %q: %v", name, msg, err)
	}
	return c, seen
}

// echo sends s over c and reads it back.
func echo(c *websocket.Conn, s string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
		return err
	}
	_, msg, err := c.Read(ctx)
	if err == nil && string(msg) != s {
		return &echoError{got: string(msg), want: s}
	}
	return err
}

type echoError struct{ got, want string }

func (e *echoError) Error() string { return "echoed " + e.got + "; want " + e.want }

// A WebSocket passes through `minica proxy` with the identity headers of
// its client, and none that the client sent itself; once the client is
// revoked (`minica revoke` publishes the CRL), the proxy closes its open
// socket at the next reload and logs why, while another client's socket
// goes on.
func TestProxyProcessWebSocket(t *testing.T) {
	t.Parallel()
	f := &proxyFixture{dir: newCADir(t), upstream: wsUpstream(t)}
	mustMinica(t, f.dir, "issue", "server", "app", "--dns", "localhost", "--ip", "127.0.0.1")
	mustMinica(t, f.dir, "issue", "client", "alice", "--email", "alice@example.com")
	mustMinica(t, f.dir, "issue", "client", "bob", "--email", "bob@example.com")
	const interval = 300 * time.Millisecond
	p := f.startProxy(t, "--reload-interval", interval.String())

	spoof := http.Header{}
	for _, name := range []string{"X-SSL-Client-CN", "X_SSL_CLIENT_CN", "x-ssl-client-verify", "X-SSL-Client-Email",
		"X-Forwarded-Client-Cert", "Client-Cert", "Forwarded", "X-Forwarded-For", "X-Forwarded-Proto"} {
		spoof[name] = []string{"spoof"}
	}
	alice, seen := f.dialWS(t, p.addr, "alice", spoof)
	for name, vs := range seen {
		for _, v := range vs {
			if strings.Contains(v, "spoof") {
				t.Errorf("the upstream got the spoofed %s: %q", name, v)
			}
		}
	}
	for name, want := range map[string]string{
		"X-Ssl-Client-Cn": "alice", "X-Ssl-Client-Email": "alice@example.com", "X-Ssl-Client-Verify": "SUCCESS",
		"X-Forwarded-Proto": "https", "X-Forwarded-For": "127.0.0.1", "Upgrade": "websocket",
	} {
		if got := seen.Values(name); len(got) != 1 || got[0] != want {
			t.Errorf("the upstream got %s %q; want %q", name, got, want)
		}
	}
	if err := echo(alice, "hello"); err != nil {
		t.Fatalf("alice's socket: %v", err)
	}
	bob, _ := f.dialWS(t, p.addr, "bob", nil)

	// alice reads until the proxy cuts her socket; the 5 s bound only
	// keeps a failing test from hanging.
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _, err := alice.Read(ctx)
		closed <- err
	}()
	revoked := time.Now()
	mustMinica(t, f.dir, "revoke", "alice")
	err := <-closed
	if err == nil || strings.Contains(err.Error(), "context deadline exceeded") {
		t.Fatalf("alice's socket after her revocation: %v; want it closed by the proxy", err)
	}
	t.Logf("alice's socket closed %s after the revocation (reload interval %s): %v", time.Since(revoked).Round(time.Millisecond), interval, err)
	p.waitLog(t, " exchange-closed remote=127.0.0.1:", " cn=alice ", " uri=/ws ", " reason=revoked")
	p.waitLog(t, " request remote=127.0.0.1:", " cn=alice ", " uri=/ws ", " status=101 reason=revoked ")
	if err := echo(bob, "still there"); err != nil {
		t.Errorf("bob's socket after alice's revocation: %v", err)
	}
}

// With --access-log-format json every line of the --access-log file is
// one JSON object: a request line has the fields of docs/proxy.md.
func TestProxyProcessJSONLog(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	logFile := t.TempDir() + "/access.log"
	p := f.startProxy(t, "--access-log", logFile, "--access-log-format", "JSON")
	if status, _, body, _, err := get(f.client(t, "alice"), "https://"+p.addr+"/hello?q=1"); err != nil || status != 200 {
		t.Fatalf("GET as alice: %d %q %v", status, body, err)
	}
	var line map[string]any
	eventually(t, "the access log", func() string {
		raw, _ := os.ReadFile(logFile)
		data := string(raw)
		for _, l := range strings.Split(strings.TrimSpace(data), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				return "holding a line that is not JSON: " + l
			}
			if m["event"] == "request" {
				line = m
				return ""
			}
		}
		return "without a request line: " + data
	})
	for k, want := range map[string]any{
		"cn": "alice", "decision": "allowed", "reason": "", "method": "GET", "path": "/hello",
		"proto": "HTTP/1.1", "status": 200.0, "route": "upstream",
	} {
		if line[k] != want {
			t.Errorf("request line %s = %#v; want %#v", k, line[k], want)
		}
	}
	for _, k := range []string{"time", "remote", "serial", "fingerprint", "bytes", "latency", "days_left"} {
		if _, ok := line[k]; !ok {
			t.Errorf("request line %v: no %s", line, k)
		}
	}
}
