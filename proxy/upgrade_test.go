package proxy

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// switchProtocols is an upstream's answer to a WebSocket upgrade: it
// hijacks the connection of w and sends 101; the caller closes c.
func switchProtocols(w http.ResponseWriter) (c net.Conn, rw *bufio.ReadWriter, err error) {
	c, rw, err = http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, nil, err
	}
	rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	if err := rw.Flush(); err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, rw, nil
}

// TestUpgradeSpoofing sends a WebSocket upgrade by hand with spoofed
// identity headers, some of them named in Connection beside Upgrade (so
// that a proxy stripping hop-by-hop headers after setting its own would
// lose them): the upstream must get the proxy's identity headers only,
// and the upgrade.
func TestUpgradeSpoofing(t *testing.T) {
	seen := make(chan http.Header, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		c, _, err := switchProtocols(w)
		if err != nil {
			return
		}
		defer c.Close()
	}))
	t.Cleanup(up.Close)
	e := newEnv(t, func(c *Config) { c.Upstream = up.URL })
	cert, key := e.ca.Leaf(t, aliceTemplate())
	c := e.dialHTTP1(t, cert, key)
	c.SetDeadline(time.Now().Add(closeWait))
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"+
		"Connection: Upgrade, X-SSL-Client-CN, X-SSL-Client-Verify, X-Forwarded-For\r\n"+
		"X-SSL-Client-CN: spoof\r\nX_SSL_CLIENT_CN: spoof\r\nX-SSL-Client-Verify: spoof\r\nX-Forwarded-For: spoof\r\n"+
		"X-Forwarded-Client-Cert: spoof\r\nClient-Cert: spoof\r\nForwarded: spoof\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: status %d; want 101", resp.StatusCode)
	}
	got := <-seen
	for k, vs := range got {
		for _, v := range vs {
			if strings.Contains(v, "spoof") {
				t.Errorf("the upstream got the spoofed %s: %q", k, v)
			}
		}
	}
	for k, want := range map[string]string{"X-Ssl-Client-Cn": "alice", "X-Ssl-Client-Verify": "SUCCESS",
		"X-Forwarded-For": "127.0.0.1", "Upgrade": "websocket", "Connection": "Upgrade"} {
		if vs := got.Values(k); len(vs) != 1 || vs[0] != want {
			h, _ := json.Marshal(got)
			t.Errorf("the upstream got %s %q; want %q in\n%s", k, vs, want, h)
		}
	}
	c.Close() // the tunnel ends when both sides have ended; then it is logged
	e.waitLog("request ", "cn=alice", "uri=/ws", "status=101")
}
