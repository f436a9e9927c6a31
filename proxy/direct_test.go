package proxy

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"minica/proxy/internal/h1direct"
)

// traceWriter is a ResponseWriter that records what a handler does with
// it: each header written (1xx ones too) with its fields, each body write,
// each flush, and the header fields set after the body (trailers).
type traceWriter struct {
	mu      sync.Mutex
	h       http.Header
	events  []string
	flushes []int // len(events) at each flush
	wrote   bool
}

func (w *traceWriter) Header() http.Header { return w.h }

func (w *traceWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wrote {
		return
	}
	w.events = append(w.events, fmt.Sprintf("header %d %s", code, dumpHeader(w.h)))
	w.wrote = code >= 200
}

func (w *traceWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, "body "+string(b))
	return len(b), nil
}

func (w *traceWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushes = append(w.flushes, len(w.events))
}

// dumpHeader is h sorted, without Date (which moves between two requests),
// the names of Trailer sorted (ReverseProxy lists them in map order).
func dumpHeader(h http.Header) string {
	var lines []string
	for k, vs := range h {
		if k == "Trailer" {
			var names []string
			for _, v := range vs {
				names = append(names, strings.Split(v, ", ")...)
			}
			slices.Sort(names)
			vs = names
		}
		if k != "Date" {
			lines = append(lines, fmt.Sprintf("%s=%q", k, vs))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, " ")
}

// joinBodies joins the body writes that follow each other: how the
// upstream's writes arrive in reads is a matter of timing.
func joinBodies(events []string) []string {
	var out []string
	for _, ev := range events {
		if n := len(out); n > 0 && strings.HasPrefix(ev, "body ") && strings.HasPrefix(out[n-1], "body ") {
			out[n-1] += strings.TrimPrefix(ev, "body ")
			continue
		}
		out = append(out, ev)
	}
	return out
}

// rpOnly hides the h1direct Transport from the handler, so that requests
// go through ReverseProxy (which still reaches the short way through it).
type rpOnly struct{ t *h1direct.Transport }

func (o rpOnly) RoundTrip(r *http.Request) (*http.Response, error) { return o.t.RoundTrip(r) }

// TestDirectAsReverseProxy forwards the same requests directly and through
// ReverseProxy and compares what the upstream got and what the client got:
// headers (hop-by-hop ones, those named in Connection, Te, X-Forwarded-*,
// spoofed identity headers), 1xx answers, HEAD, 204 and 304, chunked and
// event-stream bodies, trailers announced and not, upstream errors, a body
// cut midway, a client gone.
func TestDirectAsReverseProxy(t *testing.T) {
	var got atomic.Pointer[string]
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dump := fmt.Sprintf("%s %s %s host=%s close=%v %s", r.Method, r.RequestURI, r.Proto, r.Host, r.Close, dumpHeader(r.Header))
		got.Store(&dump)
		h := w.Header()
		switch r.URL.Path {
		case "/hop":
			h.Set("Connection", "X-Bar, close")
			h.Set("X-Bar", "1")
			h.Set("Keep-Alive", "timeout=5")
			h.Set("Proxy-Authenticate", "Basic")
			h.Set("Upgrade", "h2c")
			h.Set("X-Kept", "yes")
			w.Write([]byte("hop"))
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		case "/304":
			h.Set("Etag", `"x"`)
			w.WriteHeader(http.StatusNotModified)
		case "/chunked":
			w.Write([]byte("one,"))
			w.(http.Flusher).Flush()
			w.Write([]byte("two"))
		case "/events":
			h.Set("Content-Type", "Text/Event-Stream; charset=utf-8")
			h.Set("Content-Length", "8")
			w.Write([]byte("data: x\n"))
		case "/trailers":
			h.Set("Trailer", "X-Sum")
			w.Write([]byte("body"))
			h.Set("X-Sum", "42")
			h.Set(http.TrailerPrefix+"X-Late", "late")
		case "/announced":
			h.Set("Trailer", "X-Sum, X-Count")
			w.Write([]byte("body"))
			h.Set("X-Sum", "42")
			h.Set("X-Count", "1")
		case "/early":
			h.Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			h.Del("Link")
			w.Write([]byte("after hints"))
		case "/fail":
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
		case "/cut":
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"))
			c.Close()
		default:
			h.Set("X-Upstream", "yes")
			w.Write([]byte("hello " + r.URL.RawQuery))
		}
	}))
	defer upstream.Close()
	e := newEnv(t, func(c *Config) { c.Upstream, c.StandardForwarding = upstream.URL, false })
	cert, _ := e.ca.Client(t, "alice")
	ci := &conn{certs: []*x509.Certificate{cert}}
	e.p.check(ci, e.p.trust.Load(), nil)
	if ci.refused != "" {
		t.Fatal(ci.refused)
	}
	h1 := e.p.rp.Transport.(*h1direct.Transport)

	tests := []struct {
		name     string
		method   string
		target   string
		header   http.Header
		direct   bool // the direct way takes it
		gone     bool // the client's context is cancelled
		wantCode int  // the first header's status
	}{
		{name: "plain", target: "/x?a=1&b=%20", direct: true, wantCode: 200, header: http.Header{
			"Accept": {"*/*"}, "Cookie": {"a=b", "c=d"}, "X-Ssl-Client-Cn": {"spoof"}, "User-Agent": {"t"}}},
		{name: "no user agent", target: "/", direct: true, wantCode: 200},
		{name: "connection-listed", target: "/", direct: true, wantCode: 200, header: http.Header{
			"Connection": {"X-Foo, keep-alive", " x-baz "}, "X-Foo": {"1"}, "X-Baz": {"2"}, "Keep-Alive": {"300"},
			"Proxy-Connection": {"keep-alive"}, "Proxy-Authorization": {"Basic x"}, "X-Stays": {"3"}}},
		{name: "te trailers", target: "/", direct: true, wantCode: 200, header: http.Header{"Te": {"gzip, Trailers"}}},
		{name: "te without trailers", target: "/", direct: true, wantCode: 200, header: http.Header{"Te": {"gzip"}}},
		{name: "forwarded spoofed", target: "/", direct: true, wantCode: 200, header: http.Header{
			"X-Forwarded-For": {"1.2.3.4"}, "Forwarded": {"for=x"}, "X-Forwarded-Host": {"evil"}, "X-Forwarded-Proto": {"gopher"}}},
		{name: "upgrade", target: "/", wantCode: 200, header: http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}},
		{name: "upgrade not in connection", target: "/", wantCode: 200, header: http.Header{"Upgrade": {"websocket"}}},
		{name: "query re-encoded", target: "/q?a=1;b=2", wantCode: 200},
		{name: "escaped path", target: "/a%3Bb%20c/", direct: true, wantCode: 200},
		{name: "head", method: "HEAD", target: "/", direct: true, wantCode: 200},
		{name: "204", target: "/204", direct: true, wantCode: 204},
		{name: "304", target: "/304", direct: true, wantCode: 304},
		{name: "response hop-by-hop", target: "/hop", direct: true, wantCode: 200},
		{name: "chunked", target: "/chunked", direct: true, wantCode: 200},
		{name: "event stream", target: "/events", direct: true, wantCode: 200},
		{name: "trailers", target: "/trailers", direct: true, wantCode: 200},
		{name: "trailers announced", target: "/announced", direct: true, wantCode: 200},
		{name: "early hints", target: "/early", direct: true, wantCode: 103},
		{name: "upstream fails", target: "/fail", direct: true, wantCode: 502},
		{name: "body cut", target: "/cut", direct: true, wantCode: 200},
		{name: "bad header value", target: "/", direct: true, wantCode: 502, header: http.Header{"X-Bad": {"a\x01b"}}},
		{name: "bad header name", target: "/", direct: true, wantCode: 502, header: http.Header{"X Bad": {"ab"}}},
		{name: "client gone", target: "/", direct: true, gone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := func(rt http.RoundTripper) (upstream string, w *traceWriter, panicked any) {
				e.p.rp.Transport = rt
				got.Store(nil)
				ctx, cancel := context.WithCancel(context.WithValue(context.Background(), connKey{}, ci))
				defer cancel()
				ctx = context.WithValue(ctx, http.ServerContextKey, e.p.srv)
				if tt.gone {
					cancel()
				}
				method := tt.method
				if method == "" {
					method = "GET"
				}
				r := httptest.NewRequestWithContext(ctx, method, "https://localhost"+tt.target, nil)
				r.Header = tt.header.Clone()
				if r.Header == nil {
					r.Header = http.Header{}
				}
				if h1.Takes(r) != tt.direct {
					t.Fatalf("Takes = %v; want %v", h1.Takes(r), tt.direct)
				}
				w = &traceWriter{h: http.Header{}}
				func() {
					defer func() { panicked = recover() }()
					e.p.ServeHTTP(w, r)
				}()
				if s := got.Load(); s != nil {
					upstream = *s
				}
				w.events = append(w.events, "end "+dumpHeader(w.h))
				return upstream, w, panicked
			}
			upRP, wRP, pRP := run(rpOnly{h1})
			upD, wD, pD := run(h1)
			e.p.rp.Transport = h1
			if upD != upRP {
				t.Errorf("upstream got, directly:\n%s\nthrough ReverseProxy:\n%s", upD, upRP)
			}
			if d, rp := joinBodies(wD.events), joinBodies(wRP.events); !slices.Equal(d, rp) {
				t.Errorf("client got, directly:\n%s\nthrough ReverseProxy:\n%s", strings.Join(d, "\n"), strings.Join(rp, "\n"))
			}
			if pD != pRP {
				t.Errorf("panic directly %v; through ReverseProxy %v", pD, pRP)
			}
			if tt.gone || tt.name == "body cut" {
				if pD != http.ErrAbortHandler {
					t.Errorf("panic %v; want http.ErrAbortHandler", pD)
				}
			} else if !strings.HasPrefix(wD.events[0], fmt.Sprintf("header %d ", tt.wantCode)) {
				t.Errorf("first event %q; want status %d", wD.events[0], tt.wantCode)
			}
			if tt.name != "client gone" && tt.name != "bad header value" && tt.name != "bad header name" && upD == "" {
				t.Error("the upstream got no request")
			}
			if tt.name == "chunked" {
				// Flushed after each write, as ReverseProxy does for a
				// body of unknown length.
				for i, ev := range wD.events {
					if strings.HasPrefix(ev, "body ") && !slices.Contains(wD.flushes, i+1) {
						t.Errorf("no flush after %q (events %q, flushes %v)", ev, wD.events, wD.flushes)
					}
				}
			}
		})
	}
}

// The direct way reuses the outbound header of one request for the next:
// nothing of the first reaches the upstream with the second.
func TestDirectHeaderReuseLeaksNothing(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Join(r.Header["X-One"], ",")+"|"+r.Header.Get("X-Forwarded-Host")+"|"+r.Header.Get("X-Ssl-Client-Cn"))
	}))
	defer up.Close()
	e := newEnv(t, func(c *Config) { c.Upstream = up.URL })
	alice, aliceKey := e.ca.Client(t, "alice")
	bob, bobKey := e.ca.Client(t, "bob")
	ca, cb := e.client(alice, aliceKey, false), e.client(bob, bobKey, false)
	for i := range 20 {
		c, cn, hdr, want1 := ca, "alice", http.Header{"X-One": {"1", "2"}}, "1,2"
		if i%2 == 1 {
			c, cn, hdr, want1 = cb, "bob", nil, ""
		}
		code, body := e.get(c, "/", hdr)
		if want := want1 + "|" + e.addr + "|" + cn; code != 200 || !strings.HasPrefix(body, want) {
			t.Fatalf("request %d: %d %q; want 200 %q", i, code, body, want)
		}
	}
}
