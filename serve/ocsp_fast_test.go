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

	"github.com/valyala/fasthttp/fasthttputil"
	"golang.org/x/crypto/ocsp"

	"minica/revoke"
	"minica/serve/internal/connlimit"
)

// A frontEnd puts an HTTP server in front of a responder: the responder
// itself (net/http), or the dedicated listener's fasthttp server, reached
// through a real client over an in-memory connection.
type frontEnd func(testing.TB, *OCSPResponder) http.Handler

// bothFrontEnds runs test against each front end.
func bothFrontEnds(t *testing.T, test func(*testing.T, frontEnd)) {
	for _, fe := range []struct {
		name  string
		front frontEnd
	}{
		{"net-http", func(_ testing.TB, r *OCSPResponder) http.Handler { return r }},
		{"fasthttp", fastFront},
	} {
		t.Run(fe.name, func(t *testing.T) { test(t, fe.front) })
	}
}

// fastFront returns an http.Handler that sends each request to r's
// fasthttp server (every path routed to the responder, as when
// ServeHTTP is called directly) and copies the answer back.
func fastFront(t testing.TB, r *OCSPResponder) http.Handler {
	cfg := Config{}
	setDefaults(&cfg)
	srv := r.fastServer(cfg, func(string, string) bool { return true }, func(string, int) {})
	ln := fasthttputil.NewInmemoryListener()
	go srv.Serve(ln)
	tr := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return ln.Dial() }}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Shutdown()
		ln.Close()
	})
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		out := req.Clone(context.Background())
		out.RequestURI = ""
		u := *req.URL
		if !strings.HasPrefix(u.Path, "/") { // a path under StripPrefix
			u.Path, u.RawPath = "/"+u.Path, ""
		}
		u.Scheme, u.Host = "http", "ocsp.test"
		out.URL = &u
		resp, err := tr.RoundTrip(out)
		if err != nil {
			t.Errorf("%s %s through fasthttp: %v", req.Method, req.URL, err)
			w.WriteHeader(599)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})
}

// listenOCSP serves f's Server's OCSP listener on a loopback port.
func (f *fixture) listenOCSP(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- f.srv.ServeOCSP(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		f.srv.Shutdown(ctx)
		if err := <-served; err != nil {
			t.Errorf("ServeOCSP() = %v after Shutdown; want nil", err)
		}
	})
	return ln.Addr().String()
}

func ocspFixture(t *testing.T, mod func(*Config)) (*fixture, *OCSPResponder) {
	t.Helper()
	var r *OCSPResponder
	f := newFixture(t, func(c *Config) {
		c.CA.SetOCSPURL("http://pki.example.com/status")
		r = newTestResponder(t, OCSPConfig{CA: c.CA, Signer: c.Signer})
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
		if r, err := ocsp.ParseResponseForCert(body, alice, f.ca.Cert); err != nil || r.Status != ocsp.Good {
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
		if r, err := ocsp.ParseResponseForCert(body, alice, f.ca.Cert); err != nil || r.Status != ocsp.Good || resp.Header.Get("ETag") == "" {
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
// MaxOCSPRequest gets malformedRequest and the connection closed, headers
// beyond MaxHeaderBytes 431, headers or a body that do not come within
// ReadHeaderTimeout a closed connection.
func TestOCSPListenerLimits(t *testing.T) {
	f, _ := ocspFixture(t, func(c *Config) { c.ReadHeaderTimeout = 200 * time.Millisecond; c.MaxHeaderBytes = 1024 })
	addr := f.listenOCSP(t)
	big := make([]byte, MaxOCSPRequest+1)
	resp, err := http.Post("http://"+addr+"/ocsp", "application/ocsp-request", bytes.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(body, ocsp.MalformedRequestErrorResponse) || !resp.Close || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("oversized body: HTTP %d, body %x, close %v, headers %v; want 200, malformedRequest, closed, nosniff", resp.StatusCode, body, resp.Close, resp.Header)
	}
	hdr := "GET /ocsp/AA HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 16<<10) + "\r\n\r\n"
	if got := rawRequest(t, addr, hdr); !strings.HasPrefix(got, "HTTP/1.1 431") {
		t.Errorf("oversized headers: %q; want 431", got)
	}
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
			t.Errorf("%q answered: %q", partial, data)
		}
	}
	if m := f.metrics(t); !hasLine(m, `minica_serve_ocsp_responses_total{status="malformed"} 1`) {
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

// The dedicated listener's connections are those of its connlimit.Listener:
// the handler finds the connlimit.Conn under each to mark it busy, bytes pass
// both ways (a read after a write yields first), and Close gives the slot
// back.
func TestOCSPListenerConns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var n connlimit.Counters
	lim := connlimit.NewListener(ln, 4, &n)
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := fastListener{lim}.Accept()
	if err != nil {
		t.Fatal(err)
	}
	tc := trackedOf(c)
	if tc == nil || n.Open.Load() != 1 {
		t.Fatalf("trackedOf(%T) = %v, %d connections; want the connlimit.Listener's one", c, tc, n.Open.Load())
	}
	if trackedOf(client) != nil {
		t.Errorf("trackedOf(a plain connection) is not nil")
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	client.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 16)
	for _, msg := range []string{"first", "second"} {
		io.WriteString(client, msg)
		if n, err := io.ReadAtLeast(c, buf, len(msg)); err != nil || string(buf[:n]) != msg {
			t.Fatalf("server read %q, %v; want %q", buf[:n], err, msg)
		}
		if _, err := io.WriteString(c, "answer "+msg); err != nil {
			t.Fatal(err)
		}
		if n, err := io.ReadAtLeast(client, buf, len("answer "+msg)); err != nil || string(buf[:n]) != "answer "+msg {
			t.Fatalf("client read %q, %v", buf[:n], err)
		}
	}
	c.Close()
	if n.Open.Load() != 0 {
		t.Errorf("after Close: %d counted; want none", n.Open.Load())
	}
}

// The dedicated listener's refusals carry the headers of the main
// listener's (plain): nosniff, text/plain and, for those the handler
// makes, no-store.
func TestOCSPListenerRefusalHeaders(t *testing.T) {
	f, _ := ocspFixture(t, func(c *Config) { c.MaxHeaderBytes = 1024 })
	addr := f.listenOCSP(t)
	for _, tt := range []struct {
		req     string
		status  int
		noStore bool
	}{
		{"GET /ca.crt HTTP/1.1\r\nHost: x\r\n\r\n", 404, true},
		{"GET /ocsp/%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400, true},
		{"GET /ocsp/AA HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", 431, false},
		{"NOT HTTP\r\n\r\n", 400, false},
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
		if resp.StatusCode != tt.status || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Type") != "text/plain; charset=utf-8" ||
			(tt.noStore && h.Get("Cache-Control") != "no-store") || len(body) == 0 {
			t.Errorf("%.30q: HTTP %d, headers %v, body %q; want %d, nosniff, text/plain (no-store %v)", tt.req, resp.StatusCode, h, body, tt.status, tt.noStore)
		}
	}
}

// The two listeners give the same answer to the same request: status,
// header fields (Date aside, which each server stamps from its clock of
// the current second) and the body, byte for byte.
func TestOCSPListenersAnswerAlike(t *testing.T) {
	f, _ := ocspFixture(t, nil)
	alice := issue(t, f.ca, f.signer, "alice")
	bob := issue(t, f.ca, f.signer, "bob")
	if _, err := f.ca.Revoke(bob.SerialNumber, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	main, dedicated := f.listen(t), f.listenOCSP(t)
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
		mr, mb := exchange(main, req)
		dr, db := exchange(dedicated, req)
		for _, r := range []*http.Response{mr, dr} {
			if _, err := http.ParseTime(r.Header.Get("Date")); err != nil || len(r.Header["Date"]) != 1 {
				t.Errorf("%.40q: Date %q; want one HTTP date", req, r.Header["Date"])
			}
			r.Header.Del("Date")
		}
		if mr.StatusCode != dr.StatusCode || !reflect.DeepEqual(mr.Header, dr.Header) || !bytes.Equal(mb, db) {
			t.Errorf("%.40q:\nmain:      HTTP %d %v, body %x\ndedicated: HTTP %d %v, body %x", req, mr.StatusCode, mr.Header, mb, dr.StatusCode, dr.Header, db)
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
