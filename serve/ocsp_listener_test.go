package serve

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	xocsp "golang.org/x/crypto/ocsp"

	"minica/revoke"
	"minica/serve/ocsp"
)

// listenOCSP serves f's Server's OCSP listener on a loopback port.
func (f *fixture) listenOCSP(t *testing.T) string {
	t.Helper()
	return f.listenWith(t, f.srv.ServeOCSP)
}

// listenWith serves f's Server on a loopback port with serve.
func (f *fixture) listenWith(t *testing.T, serve func(net.Listener) error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		f.srv.Shutdown(ctx)
		if err := <-served; err != nil {
			t.Errorf("serving the OCSP listener = %v after Shutdown; want nil", err)
		}
	})
	return ln.Addr().String()
}

func ocspFixture(t *testing.T, mod func(*Config)) (*fixture, *ocsp.Responder) {
	t.Helper()
	var r *ocsp.Responder
	f := newFixture(t, func(c *Config) {
		c.CA.SetOCSPURL("http://pki.example.com/status")
		r = newTestResponder(t, ocsp.Config{CA: c.CA, Signer: c.Signer})
		c.OCSP, c.OCSPURL, c.ExtraMetrics = r, c.CA.Settings.OCSPURL, r.WriteMetrics
		if mod != nil {
			mod(c)
		}
	})
	return f, r
}

// The dedicated listener answers the OCSP paths of the main listener
// (POST at /, /ocsp and the OCSP URL's path; GET with the request in the
// path) and nothing else, counted in the main listener's metrics.
func TestOCSPListenerRoutes(t *testing.T) {
	f, _ := ocspFixture(t, nil)
	addr := f.listenOCSP(t)
	alice := issue(t, f.ca, f.signer, "alice")
	der := request(t, alice, f.ca.Cert, crypto.SHA1)
	b64 := base64.StdEncoding.EncodeToString(der)
	client := &http.Client{Timeout: 5 * time.Second}
	for _, path := range []string{"/", "/ocsp", "/status"} {
		resp, err := client.Post("http://"+addr+path, "application/ocsp-request", bytes.NewReader(der))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Server") != "" {
			t.Errorf("POST %s: HTTP %d, headers %v; want 200, nosniff, no Server", path, resp.StatusCode, resp.Header)
		}
		if r, err := xocsp.ParseResponseForCert(body, alice, f.ca.Cert); err != nil || r.Status != xocsp.Good {
			t.Errorf("POST %s: %v; want good", path, err)
		}
	}
	for _, path := range []string{"/ocsp/" + strings.ReplaceAll(b64, "/", "%2F"), "/status/" + b64} {
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if r, err := xocsp.ParseResponseForCert(body, alice, f.ca.Cert); err != nil || r.Status != xocsp.Good || resp.Header.Get("ETag") == "" {
			t.Errorf("GET %.20s…: %v, ETag %q; want good with an ETag", path, err, resp.Header.Get("ETag"))
		}
	}
	for _, tt := range []struct{ req, want string }{
		{"GET /ca.crt HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404 Not Found"},
		{"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404 Not Found"},
		{"POST /crl.der HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", "HTTP/1.1 404 Not Found"},
		{"PUT /ocsp HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", "HTTP/1.1 405 Method Not Allowed"},
		{"BREW /ocsp HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 405 Method Not Allowed"},
		{"GET /ocsp/%zz HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 Bad Request"},
		{"NOT HTTP\r\n\r\n", "HTTP/1.1 400 Bad Request"},
	} {
		if got := rawRequest(t, addr, tt.req); got != tt.want {
			t.Errorf("%q: %q; want %q", tt.req, got, tt.want)
		}
	}
	m := f.metrics(t)
	for _, want := range []string{
		`minica_serve_requests_total{endpoint="ocsp",code="200"} 5`,
		`minica_serve_requests_total{endpoint="ocsp",code="405"} 2`,
		`minica_serve_requests_total{endpoint="other",code="404"} 3`,
		`minica_serve_ocsp_responses_total{status="good"} 5`,
	} {
		if !hasLine(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, m)
		}
	}
}

// The dedicated listener keeps the main listener's limits: a body beyond
// ocsp.MaxRequest gets malformedRequest and the connection closed, headers
// beyond MaxHeaderBytes 431, headers or a body that do not come within
// ReadHeaderTimeout a closed connection. On net/http (the build tag
// stdocsp), as on the main listeners, the connection of an oversized body
// stays open, and a body that does not come in time gets malformedRequest
// before the connection closes.
func TestOCSPListenerLimits(t *testing.T) {
	f, _ := ocspFixture(t, func(c *Config) { c.ReadHeaderTimeout = 200 * time.Millisecond; c.MaxHeaderBytes = 1024 })
	addr := f.listenOCSP(t)
	big := make([]byte, ocsp.MaxRequest+1)
	resp, err := http.Post("http://"+addr+"/ocsp", "application/ocsp-request", bytes.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(body, xocsp.MalformedRequestErrorResponse) || (!resp.Close && ocspFrontFast) || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("oversized body: HTTP %d, body %x, close %v, headers %v; want 200, malformedRequest, closed, nosniff", resp.StatusCode, body, resp.Close, resp.Header)
	}
	hdr := "GET /ocsp/AA HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 16<<10) + "\r\n\r\n"
	if got := rawRequest(t, addr, hdr); !strings.HasPrefix(got, "HTTP/1.1 431") {
		t.Errorf("oversized headers: %q; want 431", got)
	}
	malformed := 1
	for _, partial := range []string{
		"GET /ocsp/AA HTTP/1.1\r\nHost: x\r\n",
		"POST /ocsp HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123",
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, partial)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		data, err := io.ReadAll(c)
		c.Close()
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("%q: connection still open after 5s (ReadHeaderTimeout 200ms)", partial)
		}
		if strings.Contains(string(data), "200 OK") {
			if ocspFrontFast || !strings.HasSuffix(string(data), string(xocsp.MalformedRequestErrorResponse)) {
				t.Errorf("%q answered: %q", partial, data)
			}
			malformed++
		}
	}
	if m := f.metrics(t); !hasLine(m, fmt.Sprintf(`minica_serve_ocsp_responses_total{status="malformed"} %d`, malformed)) {
		t.Errorf("metrics: the oversized body is not counted malformed:\n%s", m)
	}
}

// Slow clients holding every connection slot do not keep a real client
// out of the dedicated listener: the oldest are closed for it.
func TestOCSPListenerSlowloris(t *testing.T) {
	const maxConns = 8
	f, _ := ocspFixture(t, func(c *Config) { c.MaxConns = maxConns; c.ReadHeaderTimeout = time.Minute })
	addr := f.listenOCSP(t)
	der := request(t, issue(t, f.ca, f.signer, "alice"), f.ca.Cert, crypto.SHA1)
	var slow []net.Conn
	for range 3 * maxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "POST /ocsp HTTP/1.1\r\nHost: x\r\nX-Slow: a")
		slow = append(slow, c)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 5 {
		resp, err := client.Post("http://"+addr+"/ocsp", "application/ocsp-request", bytes.NewReader(der))
		if err != nil {
			t.Fatalf("request %d with %d slow connections open: %v", i, len(slow), err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d = %d; want 200", i, resp.StatusCode)
		}
	}
	if m := f.metrics(t); hasLine(m, "minica_serve_connections_evicted_total 0") {
		t.Errorf("no connection evicted:\n%s", m)
	}
	slow[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := slow[0].Read(make([]byte, 1)); err == nil {
		t.Errorf("the oldest slow connection is still open")
	}
}

// Shutdown stops the dedicated listener with the others; ServeOCSP
// after Shutdown returns at once; without a responder it fails.
func TestOCSPListenerShutdown(t *testing.T) {
	f, _ := ocspFixture(t, nil)
	addr := f.listenOCSP(t)
	if got := rawRequest(t, addr, "GET /ocsp/AA HTTP/1.1\r\nHost: x\r\n\r\n"); got != "HTTP/1.1 200 OK" {
		t.Fatalf("before Shutdown: %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown() = %v", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("the OCSP listener still accepts connections after Shutdown")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.srv.ServeOCSP(ln); err != nil {
		t.Errorf("ServeOCSP() after Shutdown = %v; want nil", err)
	}
	g := newFixture(t, nil)
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.srv.ServeOCSP(ln); err == nil || !strings.Contains(err.Error(), "no OCSP responder") {
		t.Errorf("ServeOCSP() without a responder = %v; want an error naming it", err)
	}
}

// The dedicated listener's refusals carry the headers of the main
// listener's (plain): nosniff, text/plain and, for those the handler
// makes, no-store. On fasthttp the refusals of requests that do not parse
// carry nosniff too; net/http (the build tag stdocsp) makes those itself,
// without it, as on the main listeners.
func TestOCSPListenerRefusalHeaders(t *testing.T) {
	f, _ := ocspFixture(t, func(c *Config) { c.MaxHeaderBytes = 1024 })
	addr := f.listenOCSP(t)
	for _, tt := range []struct {
		req     string
		status  int
		noStore bool
		parser  bool // refused before any handler
	}{
		{"GET /ca.crt HTTP/1.1\r\nHost: x\r\n\r\n", 404, true, false},
		{"GET /ocsp/%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400, ocspFrontFast, !ocspFrontFast},
		{"GET /ocsp/AA HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", 431, false, true},
		{"NOT HTTP\r\n\r\n", 400, false, true},
	} {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(conn, tt.req)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%.30q: %v", tt.req, err)
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		h := resp.Header
		nosniff := h.Get("X-Content-Type-Options") == "nosniff" || (tt.parser && !ocspFrontFast)
		if resp.StatusCode != tt.status || !nosniff || h.Get("Content-Type") != "text/plain; charset=utf-8" ||
			(tt.noStore && h.Get("Cache-Control") != "no-store") || len(body) == 0 {
			t.Errorf("%.30q: HTTP %d, headers %v, body %q; want %d, nosniff, text/plain (no-store %v)", tt.req, resp.StatusCode, h, body, tt.status, tt.noStore)
		}
	}
}

// The main listener and the dedicated one, on its HTTP server and on
// net/http (its standard path), give the same answer to the same request:
// status, header fields (Date aside, which each server stamps from its
// clock of the current second) and the body, byte for byte.
func TestOCSPListenersAnswerAlike(t *testing.T) {
	f, _ := ocspFixture(t, nil)
	alice := issue(t, f.ca, f.signer, "alice")
	bob := issue(t, f.ca, f.signer, "bob")
	if _, err := f.ca.Revoke(bob.SerialNumber, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	main, dedicated := f.listen(t), f.listenOCSP(t)
	r := f.srv.cfg.OCSP.(*ocsp.Responder)
	std := f.listenWith(t, func(ln net.Listener) error { return f.srv.serveOCSPStd(ln, r) })
	good, revoked := request(t, alice, f.ca.Cert, crypto.SHA1), request(t, bob, f.ca.Cert, crypto.SHA256)
	post := func(path string, der []byte) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/ocsp-request\r\nContent-Length: %d\r\n\r\n%s", path, len(der), der)
	}
	b64 := base64.StdEncoding.EncodeToString(good)
	exchange := func(addr, req string) (*http.Response, []byte) {
		t.Helper()
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(conn, req)
		resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: strings.Fields(req)[0]})
		if err != nil {
			t.Fatalf("%.40q: %v", req, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	etag := func() string {
		resp, _ := exchange(main, "GET /ocsp/"+b64+" HTTP/1.1\r\nHost: x\r\n\r\n")
		return resp.Header.Get("Etag")
	}()
	for _, req := range []string{
		post("/", good),
		post("/ocsp", revoked),
		post("/status", good),
		post("/ocsp", []byte("not a request")),
		"GET /ocsp/" + b64 + " HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /status/" + strings.ReplaceAll(b64, "/", "%2F") + " HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /ocsp/" + b64 + " HTTP/1.1\r\nHost: x\r\nIf-None-Match: " + etag + "\r\n\r\n",
		"HEAD /ocsp/" + b64 + " HTTP/1.1\r\nHost: x\r\n\r\n",
		"PUT /ocsp HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
	} {
		dropDate := func(r *http.Response) {
			if _, err := http.ParseTime(r.Header.Get("Date")); err != nil || len(r.Header["Date"]) != 1 {
				t.Errorf("%.40q: Date %q; want one HTTP date", req, r.Header["Date"])
			}
			r.Header.Del("Date")
		}
		mr, mb := exchange(main, req)
		dropDate(mr)
		for name, addr := range map[string]string{"dedicated": dedicated, "dedicated on net/http": std} {
			dr, db := exchange(addr, req)
			dropDate(dr)
			if mr.StatusCode != dr.StatusCode || !reflect.DeepEqual(mr.Header, dr.Header) || !bytes.Equal(mb, db) {
				t.Errorf("%.40q:\nmain: HTTP %d %v, body %x\n%s: HTTP %d %v, body %x", req, mr.StatusCode, mr.Header, mb, name, dr.StatusCode, dr.Header, db)
			}
		}
	}
}

// On the dedicated listener "/" is the OCSP responder's (POST, for
// `openssl ocsp -url http://HOST:PORT`): another method there is 405 with
// Allow: POST, as RFC 9110 section 15.5.6 has it, not 404.
func TestOCSPListenerRootMethods(t *testing.T) {
	f, _ := ocspFixture(t, nil)
	addr := f.listenOCSP(t)
	client := &http.Client{Timeout: 5 * time.Second}
	for _, method := range []string{http.MethodPut, http.MethodDelete, http.MethodGet, http.MethodHead} {
		req, err := http.NewRequest(method, "http://"+addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
			t.Errorf("%s /: HTTP %d, Allow %q; want 405, POST", method, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	if m := f.metrics(t); !hasLine(m, `minica_serve_requests_total{endpoint="ocsp",code="405"} 4`) {
		t.Errorf("metrics lack 4 OCSP 405s:\n%s", m)
	}
}
