package proxy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHeaderLimits(t *testing.T) {
	eachProtocol(t, "", func(t *testing.T, h2 bool) {
		e := newEnv(t, nil)
		cert, key := e.ca.Client(t, "alice")
		c := e.client(cert, key, h2)
		// One byte over the limit as the proxy counts (name, value and
		// 4 bytes per field), still under what HTTP/2 advertises.
		n := DefaultMaxHeaderBytes + 1 - (len("X-Big") + 4) - (len("User-Agent") + 1 + 4) - (len("Accept-Encoding") + 4 + 4)
		big := http.Header{"X-Big": {strings.Repeat("a", n)}, "User-Agent": {"t"}}
		code, body := e.get(c, "/", big)
		if code != 431 || body != "request headers exceed 65536 bytes\n" {
			t.Errorf("over max: got %d %q; want 431 with the limit", code, body)
		}
		budget := http.Header{"X-Mid": {strings.Repeat("a", DefaultUpstreamHeaderBytes-500)}}
		code, body = e.get(c, "/", budget)
		if code != 431 || !strings.HasPrefix(body, "request headers with identity headers exceed the upstream budget of 8192 bytes") {
			t.Errorf("over budget: got %d %q; want 431 with the budget", code, body)
		}
		if e.lastReq.Load() != nil {
			t.Error("a refused request reached the upstream")
		}
		e.waitLog("request ", "status=431", "reason=upstream-header-budget")
		// Far beyond the limit: net/http answers 431 itself on HTTP/1.1;
		// an HTTP/2 client refuses to send beyond the advertised limit.
		huge := http.Header{"X-Huge": {strings.Repeat("a", 2*DefaultMaxHeaderBytes)}}
		req, _ := http.NewRequest("GET", e.url("/"), nil)
		req.Header = huge
		resp, err := c.Do(req)
		if h2 {
			if err == nil {
				resp.Body.Close()
				t.Errorf("HTTP/2 huge header: status %d; want a client error", resp.StatusCode)
			}
		} else {
			if err != nil {
				t.Fatalf("HTTP/1.1 huge header: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != 431 {
				t.Errorf("HTTP/1.1 huge header: status %d; want 431", resp.StatusCode)
			}
		}
	})
}

// TestSlowClientsAreClosed checks that a connection that never finishes its
// handshake, or its request headers, is closed by the proxy.
func TestSlowClientsAreClosed(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.HandshakeTimeout = time.Second
		c.ReadHeaderTimeout = 300 * time.Millisecond
	})
	expectClosed := func(t *testing.T, c net.Conn) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := io.ReadAll(c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the proxy kept a slow connection open")
		}
	}
	t.Run("handshake", func(t *testing.T) {
		raw, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		expectClosed(t, raw)
		e.waitLog("handshake-refused", "reason=handshake-timeout")
	})
	t.Run("slowloris", func(t *testing.T) {
		cert, key := e.ca.Client(t, "alice")
		c := e.dialHTTP1(t, cert, key)
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: 1\r\n"); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, c)
	})
}

func TestUpstreamErrors(t *testing.T) {
	t.Run("down", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		e := newEnv(t, func(c *Config) { c.Upstream = "http://" + addr })
		cert, key := e.ca.Client(t, "alice")
		if code, body := e.get(e.client(cert, key, false), "/", nil); code != 502 || body != "Bad Gateway\n" {
			t.Errorf("got %d %q; want 502", code, body)
		}
		e.waitLog("request ", "status=502", "cn=alice")
	})
	t.Run("slow", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		slow := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release })}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go slow.Serve(ln)
		defer slow.Close()
		e := newEnv(t, func(c *Config) {
			c.Upstream = "http://" + ln.Addr().String()
			c.UpstreamResponseHeaderTimeout = 100 * time.Millisecond
		})
		cert, key := e.ca.Client(t, "alice")
		if code, _ := e.get(e.client(cert, key, false), "/", nil); code != 504 {
			t.Errorf("status = %d; want 504", code)
		}
	})
}

// TestMaxConns checks that MaxConns counts the connections past their
// handshake only, and that one more waits until a slot is free.
func TestMaxConns(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxConns = 2 })
	// Connections still in their handshake take none of the slots.
	for range 2 {
		raw, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
	}
	e.waitMetric("minica_proxy_handshakes_in_progress", "2")
	cert, key := e.ca.Client(t, "alice")
	cfg := e.tlsConfig(cert, key)
	cfg.NextProtos = []string{"http/1.1"}
	var held []*tls.Conn
	for range 2 {
		c, err := tls.Dial("tcp", e.addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		// TLS 1.3 client certificates are checked after the client's
		// handshake ends: a round trip proves the server took the conn.
		roundTrip(t, c)
		held = append(held, c)
	}
	e.waitMetric("minica_proxy_open_connections", "2")
	third, err := tls.Dial("tcp", e.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if _, err := io.WriteString(third, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	br := bufio.NewReader(third)
	if _, err := http.ReadResponse(br, nil); err == nil {
		t.Fatal("a third connection was served with MaxConns 2")
	}
	held[0].Close()
	third.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the third connection once a slot was free: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status = %d; want 200", resp.StatusCode)
	}
}

func roundTrip(t *testing.T, c *tls.Conn) {
	t.Helper()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status = %d; want 200", resp.StatusCode)
	}
}

func TestShutdownDrainsInFlight(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		io.WriteString(w, "done")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go up.Serve(ln)
	defer up.Close()
	e := newEnv(t, func(c *Config) { c.Upstream = "http://" + ln.Addr().String() })
	cert, key := e.ca.Client(t, "alice")
	type result struct {
		code int
		body string
	}
	got := make(chan result, 1)
	c := e.client(cert, key, false)
	go func() {
		code, body := e.get(c, "/", nil)
		got <- result{code, body}
	}()
	<-arrived
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- e.p.Shutdown(ctx)
	}()
	// New connections are refused once Shutdown closed the listener.
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := net.Dial("tcp", e.addr)
		if err != nil {
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("still accepting connections after Shutdown")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	if r := <-got; r.code != 200 || r.body != "done" {
		t.Errorf("in-flight request: got %d %q; want 200 done", r.code, r.body)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown() error = %v", err)
	}
}

func TestHeaderLimitBoundary(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxHeaderBytes = 4096; c.UpstreamHeaderBytes = 1 << 20 })
	cert, key := e.ca.Client(t, "alice")
	for _, h2 := range []bool{false, true} {
		c := e.client(cert, key, h2)
		fixed := (len("User-Agent") + 1 + 4) + (len("Accept-Encoding") + 4 + 4) + (len("X-Pad") + 4)
		for _, tt := range []struct {
			size int
			want int
		}{{4096, 200}, {4097, 431}} {
			hdr := http.Header{"User-Agent": {"t"}, "X-Pad": {strings.Repeat("p", tt.size-fixed)}}
			if code, _ := e.get(c, "/", hdr); code != tt.want {
				t.Errorf("h2=%v, %d header bytes: status %d; want %d", h2, tt.size, code, tt.want)
			}
		}
	}
}

func TestUpstreamErrorStatus(t *testing.T) {
	e := newEnv(t, nil)
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	timeout := &net.OpError{Op: "dial", Net: "tcp", Err: timeoutError{}}
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"refused", refused, 502},
		{"dial timeout", timeout, 504},
		{"deadline", context.DeadlineExceeded, 504},
		{"other", errors.New("EOF"), 502},
	}
	for _, tt := range tests {
		rec := &recorder{ResponseWriter: &respRecorder{header: http.Header{}}}
		e.p.upstreamError(rec, nil, tt.err)
		if rec.status != tt.want || rec.upstreamErr != tt.err {
			t.Errorf("%s: status %d; want %d", tt.name, rec.status, tt.want)
		}
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// TestIdleConnectionsAreClosed checks IdleTimeout on a kept-alive HTTP/1.1
// connection and on an HTTP/2 connection that never sends a request.
func TestIdleConnectionsAreClosed(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.IdleTimeout = 300 * time.Millisecond })
	cert, key := e.ca.Client(t, "alice")
	closed := func(t *testing.T, c net.Conn) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := io.ReadAll(c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the proxy kept an idle connection open")
		}
	}
	t.Run("http1", func(t *testing.T) {
		c := e.dialHTTP1(t, cert, key)
		roundTrip(t, c)
		closed(t, c)
	})
	t.Run("http2", func(t *testing.T) {
		cfg := e.tlsConfig(cert, key)
		cfg.NextProtos = []string{"h2"}
		c, err := tls.Dial("tcp", e.addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.ConnectionState().NegotiatedProtocol != "h2" {
			t.Fatalf("ALPN = %q; want h2", c.ConnectionState().NegotiatedProtocol)
		}
		// The client preface and an empty SETTINGS frame, then nothing.
		io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
		closed(t, c)
	})
}

// The proxy passes the client's Accept-Encoding, or its absence, and the
// upstream's Content-Encoding through unchanged: it neither asks for gzip
// nor unzips on the client's behalf.
func TestContentEncodingPassesThrough(t *testing.T) {
	e := newEnv(t, nil)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	io.WriteString(zw, "hello, compressed")
	zw.Close()
	gz := buf.Bytes()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Accept-Encoding", strings.Join(r.Header.Values("Accept-Encoding"), ","))
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gz)
	}))
	defer up.Close()
	e2 := newEnvWithUpstream(t, e, up.URL)
	cert, key := e.ca.Client(t, "alice")
	c := e2.client(cert, key, false)
	c.Transport.(*http.Transport).DisableCompression = true
	for _, ae := range []string{"", "br"} {
		req, err := http.NewRequest("GET", e2.url("/"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if ae != "" {
			req.Header.Set("Accept-Encoding", ae)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Header.Get("X-Accept-Encoding"); got != ae {
			t.Errorf("client Accept-Encoding %q: upstream got %q", ae, got)
		}
		if got := resp.Header.Get("Content-Encoding"); got != "gzip" || !bytes.Equal(body, gz) {
			t.Errorf("client Accept-Encoding %q: got Content-Encoding %q, body %x; want gzip, %x", ae, got, body, gz)
		}
	}
}
