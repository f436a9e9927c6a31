package serve

import (
	"bufio"
	"bytes"
	"crypto"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	xocsp "golang.org/x/crypto/ocsp"

	"minica/serve/internal/servetest"
	"minica/serve/ocsp"
)

// On the wire behind a Server, on one kept connection: every answer has
// one Date (of the real clock), the Server's headers, and the status; a POST
// whose body never comes is cut off by the Server's read timeout.
func TestOCSPOnTheWire(t *testing.T) {
	var r *ocsp.Responder
	f := newFixture(t, func(c *Config) {
		r = newTestResponder(t, ocsp.Config{CA: c.CA, Signer: c.Signer})
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
		parsed, err := xocsp.ParseResponseForCert(body, alice, f.ca.Cert)
		if err != nil || parsed.Status != xocsp.Good {
			t.Fatalf("answer %d: %v, status %v; want good", i, err, parsed)
		}
	}
	// The same connection, a body announced and never sent.
	fmt.Fprintf(conn, "POST /ocsp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(good))
	if resp, err := http.ReadResponse(br, nil); err == nil {
		body, _ := io.ReadAll(resp.Body)
		if !bytes.Equal(body, xocsp.MalformedRequestErrorResponse) {
			t.Errorf("a body never sent: HTTP %d, %x; want malformedRequest or a closed connection", resp.StatusCode, body)
		}
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("a body never sent: the connection is still held: %v", err)
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
	base := servetest.NewFixture(b)
	c, signer := base.CA, base.Signer
	srv, err := New(Config{CA: c, Signer: signer, Log: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	srv.cfg.OCSP = newTestResponder(b, ocsp.Config{CA: c, Signer: signer})
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
