package serve

import (
	"bufio"
	"bytes"
	"crypto"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"
)

// POST bodies of every shape: a declared length read exactly, a body that
// ends before its declared length, a chunked one (no length), and bodies
// over MaxOCSPRequest either way.
func TestOCSPPostBodies(t *testing.T) {
	c, signer, _ := newTestCA(t)
	alice := issue(t, c, signer, "alice")
	r := newTestResponder(t, OCSPConfig{CA: c, Signer: signer})
	good := request(t, alice, c.Cert, crypto.SHA1)
	big := append(slices.Clone(good), make([]byte, MaxOCSPRequest)...)
	tests := []struct {
		name   string
		body   []byte
		length int64 // the declared Content-Length; -1 chunked
		good   bool
	}{
		{name: "declared length", body: good, length: int64(len(good)), good: true},
		{name: "chunked", body: good, length: -1, good: true},
		{name: "shorter than declared", body: good, length: int64(len(good)) + 10},
		{name: "longer than declared", body: good, length: int64(len(good)) - 1},
		{name: "declared over the bound", body: big, length: int64(len(big))},
		{name: "chunked over the bound", body: big, length: -1},
		{name: "declared at the bound, garbage", body: make([]byte, MaxOCSPRequest), length: MaxOCSPRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/ocsp", io.MultiReader(bytes.NewReader(tt.body)))
			req.ContentLength = tt.length
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/ocsp-response" {
				t.Fatalf("HTTP %d, Content-Type %q; want 200 application/ocsp-response", rec.Code, rec.Header().Get("Content-Type"))
			}
			if !tt.good {
				if !bytes.Equal(rec.Body.Bytes(), ocsp.MalformedRequestErrorResponse) {
					t.Errorf("body %x; want malformedRequest", rec.Body.Bytes())
				}
				return
			}
			if resp := parse(t, rec, alice, c.Cert); resp.Status != ocsp.Good {
				t.Errorf("status %d; want good", resp.Status)
			}
		})
	}
}

// The Date header is formatted once a second and shared by the answers of
// that second.
func TestOCSPDateCache(t *testing.T) {
	var d dateCache
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 100, time.UTC)
	first := d.header(t0)
	if want := "Wed, 02 Jan 2030 03:04:05 GMT"; len(first) != 1 || first[0] != want {
		t.Fatalf("header(%v) = %q; want [%q]", t0, first, want)
	}
	if again := d.header(t0.Add(800 * time.Millisecond)); &again[0] != &first[0] {
		t.Errorf("a second value within the same second: %q", again)
	}
	if next := d.header(t0.Add(time.Second)); next[0] != "Wed, 02 Jan 2030 03:04:06 GMT" {
		t.Errorf("the next second: %q", next)
	}
	if back := d.header(t0); back[0] != first[0] {
		t.Errorf("a clock stepped back: %q; want %q", back, first)
	}
}

// On the wire behind a Server, on one kept connection: every answer has
// one Date (of the real clock), the Server's headers, and the status; a POST
// whose body never comes is cut off by the Server's read timeout, and the
// responder on its own cuts it off by its own bound.
func TestOCSPOnTheWire(t *testing.T) {
	var r *OCSPResponder
	f := newFixture(t, func(c *Config) {
		r = newTestResponder(t, OCSPConfig{CA: c.CA, Signer: c.Signer})
		c.OCSP = r
		c.ReadHeaderTimeout = 300 * time.Millisecond
	})
	alice := issue(t, f.ca, f.signer, "alice")
	good := request(t, alice, f.ca.Cert, crypto.SHA1)
	addr := f.listen(t)
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	for i, path := range []string{"/ocsp", "/", "/ocsp"} {
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/ocsp-request\r\nContent-Length: %d\r\n\r\n%s", path, len(good), good)
		before := time.Now().UTC().Truncate(time.Second)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		h := resp.Header
		date, derr := http.ParseTime(h.Get("Date"))
		if resp.StatusCode != 200 || len(h["Date"]) != 1 || derr != nil || date.Before(before) || date.After(time.Now().Add(time.Second)) ||
			h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Type") != "application/ocsp-response" ||
			h.Get("Content-Length") != strconv.Itoa(len(body)) || resp.Close {
			t.Fatalf("answer %d to POST %s: HTTP %d, headers %v", i, path, resp.StatusCode, h)
		}
		parsed, err := ocsp.ParseResponseForCert(body, alice, f.ca.Cert)
		if err != nil || parsed.Status != ocsp.Good {
			t.Fatalf("answer %d: %v, status %v; want good", i, err, parsed)
		}
	}
	// The same connection, a body announced and never sent.
	fmt.Fprintf(conn, "POST /ocsp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(good))
	if resp, err := http.ReadResponse(br, nil); err == nil {
		body, _ := io.ReadAll(resp.Body)
		if !bytes.Equal(body, ocsp.MalformedRequestErrorResponse) {
			t.Errorf("a body never sent: HTTP %d, %x; want malformedRequest or a closed connection", resp.StatusCode, body)
		}
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("a body never sent: the connection is still held: %v", err)
	}
	// The responder mounted on its own (not behind a Server) bounds the body itself.
	r.bodyTimeout = 300 * time.Millisecond
	ts := httptest.NewServer(r)
	defer ts.Close()
	c2, err := net.DialTimeout("tcp", strings.TrimPrefix(ts.URL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c2, "POST /ocsp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(good))
	resp, err := http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil {
		t.Fatalf("the responder alone, a body never sent: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if !bytes.Equal(body, ocsp.MalformedRequestErrorResponse) {
		t.Errorf("the responder alone, a body never sent: HTTP %d, %x; want malformedRequest", resp.StatusCode, body)
	}
}

// BenchmarkOCSPOnTheWire measures cached answers over one kept loopback
// connection, client and server in this process, on the main listener
// (net/http) and on the dedicated one (ServeOCSP, fasthttp): the
// allocations per answer are the server's (the client makes none).
func BenchmarkOCSPOnTheWire(b *testing.B) {
	for _, bc := range []struct {
		name  string
		serve func(*Server, net.Listener) error
	}{
		{"main", func(s *Server, ln net.Listener) error { return s.Serve(ln, nil) }},
		{"dedicated", (*Server).ServeOCSP},
	} {
		b.Run(bc.name, func(b *testing.B) { benchmarkOCSPOnTheWire(b, bc.serve) })
	}
}

func benchmarkOCSPOnTheWire(b *testing.B, serve func(*Server, net.Listener) error) {
	c, signer, _ := newTestCA(b)
	srv, err := New(Config{CA: c, Signer: signer, Log: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	srv.cfg.OCSP = newTestResponder(b, OCSPConfig{CA: c, Signer: signer})
	alice := issue(b, c, signer, "alice")
	good := request(b, alice, c.Cert, crypto.SHA1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go serve(srv, ln)
	defer srv.Shutdown(b.Context())
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	req := fmt.Appendf(nil, "POST /ocsp HTTP/1.1\r\nHost: x\r\nContent-Type: application/ocsp-request\r\nContent-Length: %d\r\n\r\n%s", len(good), good)
	buf := make([]byte, 4096)
	for b.Loop() {
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
		n, err := conn.Read(buf)
		if err != nil || !bytes.HasPrefix(buf[:n], []byte("HTTP/1.1 200 ")) {
			b.Fatalf("read %q: %v", buf[:min(n, 40)], err)
		}
		// One answer per read on loopback: the headers and the body come in one write.
		if i := bytes.Index(buf[:n], []byte("\r\n\r\n")); i < 0 {
			b.Fatalf("a partial answer of %d bytes", n)
		}
	}
}
