package serve

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// listen serves f's Server on a loopback port and returns its address.
func (f *fixture) listen(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- f.srv.Serve(ln, nil) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		f.srv.Shutdown(ctx)
		<-served
	})
	return ln.Addr().String()
}

// rawRequest sends req on a new connection and returns the status line of
// the answer.
func rawRequest(t *testing.T, addr, req string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", req, err)
	}
	return strings.TrimSpace(line)
}

// Connections that trickle their headers (slowloris) cannot hold the
// server: with every slot taken by them, a real client still gets its
// answer, and the oldest of them are closed for it.
func TestSlowlorisCannotHoldIt(t *testing.T) {
	const maxConns = 8
	f := newFixture(t, func(c *Config) { c.MaxConns = maxConns; c.ReadHeaderTimeout = time.Minute })
	addr := f.listen(t)
	var slow []net.Conn
	for range 3 * maxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET /ca.crt HTTP/1.1\r\nHost: x\r\nX-Slow: a")
		slow = append(slow, c)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 5 {
		resp, err := client.Get("http://" + addr + "/ca.crt")
		if err != nil {
			t.Fatalf("request %d with %d slow connections open: %v", i, len(slow), err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d = %d; want 200", i, resp.StatusCode)
		}
	}
	m := f.metrics(t)
	if hasLine(m, "minica_serve_connections_evicted_total 0") {
		t.Errorf("no connection evicted:\n%s", m)
	}
	// The first slow connections were closed to make room.
	slow[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := slow[0].Read(make([]byte, 1)); err == nil {
		t.Errorf("the oldest slow connection is still open")
	}
}

// Request headers that take longer than ReadHeaderTimeout end the
// connection; oversized headers get 431.
func TestHeaderLimits(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.ReadHeaderTimeout = 200 * time.Millisecond; c.MaxHeaderBytes = 1024 })
	addr := f.listen(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /ca.crt HTTP/1.1\r\nHost: x\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	data, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("a connection without the end of its headers still open after 5s (ReadHeaderTimeout 200ms)")
	}
	if strings.Contains(string(data), "200 OK") {
		t.Fatalf("incomplete headers answered: %q", data)
	}
	big := "GET /ca.crt HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 16<<10) + "\r\n\r\n"
	if got := rawRequest(t, addr, big); !strings.HasPrefix(got, "HTTP/1.1 431") {
		t.Errorf("oversized headers: %q; want 431", got)
	}
}

// Odd request lines are refused on the wire too: OPTIONS *, CONNECT, an
// absolute form, TRACE, an encoded path.
func TestOddRequestsOnTheWire(t *testing.T) {
	f := newFixture(t, nil)
	addr := f.listen(t)
	tests := []struct{ req, want string }{
		{"GET /ca.crt HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK"},
		{"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 Bad Request"},
		{"CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n", "HTTP/1.1 400 Bad Request"},
		{"GET http://x/ca.crt HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 Bad Request"},
		{"TRACE /ca.crt HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 405 Method Not Allowed"},
		{"GET /%2e%2e/ca.key HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 Bad Request"},
		{"GET /crl.der/../ca.key HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 Bad Request"},
		{"GET /ca.key HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404 Not Found"},
	}
	for _, tt := range tests {
		if got := rawRequest(t, addr, tt.req); got != tt.want {
			t.Errorf("%q: %q; want %q", strings.SplitN(tt.req, "\r\n", 2)[0], got, tt.want)
		}
	}
	m := f.metrics(t)
	for _, want := range []string{`minica_serve_requests_total{endpoint="ca.crt",code="200"} 1`, `minica_serve_requests_total{endpoint="other",code="400"} 5`} {
		if !hasLine(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, m)
		}
	}
}
