package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"minica/identity"
	"minica/proxy/internal/h1direct"
)

// plainProxy is the peer: Go's TLS server verifying client certificates
// itself and a stock httputil.ReverseProxy, no identity headers.
func plainProxy(b *testing.B, e *env) string {
	pool := x509.NewCertPool()
	pool.AddCert(e.ca.Cert)
	target, _ := url.Parse(e.upstream.URL)
	srv := &http.Server{
		Handler: &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }},
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{*e.srvCert.Load()},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    pool,
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.ServeTLS(ln, "", "")
	b.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func benchEnv(b *testing.B) (*env, map[string]string) {
	e := newEnv(b, nil)
	return e, map[string]string{"minica": e.addr, "plain-go": plainProxy(b, e)}
}

// BenchmarkKeepAlive measures one request on a kept-alive HTTP/1.1
// connection through minica's proxy and through the plain Go peer.
func BenchmarkKeepAlive(b *testing.B) {
	e, addrs := benchEnv(b)
	cert, key := e.ca.Client(b, "alice")
	for _, name := range []string{"plain-go", "minica"} {
		b.Run(name, func(b *testing.B) {
			c := e.client(cert, key, false)
			u := "https://" + addrs[name] + "/"
			for b.Loop() {
				resp, err := c.Get(u)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}

// BenchmarkHandshake measures a full mTLS handshake plus one request on a
// new connection.
func BenchmarkHandshake(b *testing.B) {
	e, addrs := benchEnv(b)
	cert, key := e.ca.Client(b, "alice")
	for _, name := range []string{"plain-go", "minica"} {
		b.Run(name, func(b *testing.B) {
			c := e.client(cert, key, false)
			c.Transport.(*http.Transport).DisableKeepAlives = true
			u := "https://" + addrs[name] + "/"
			for b.Loop() {
				resp, err := c.Get(u)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// stubTransport answers every request at once, so that a benchmark
// measures the proxy's own work, not the network.
type stubTransport struct{}

func (stubTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Length": {"2"}},
		Body: io.NopCloser(strings.NewReader("ok")), ContentLength: 2, Request: r}, nil
}

// BenchmarkHandler measures one request through the proxy's HTTP handler
// (checks, header stripping and setting, logging, metrics) and through a
// stock httputil.ReverseProxy, both with a stub upstream and no TLS.
func BenchmarkHandler(b *testing.B) {
	e := newEnv(b, nil)
	cert, _ := e.ca.Client(b, "alice")
	e.p.rp.Transport = stubTransport{}
	ci := &conn{certs: []*x509.Certificate{cert}}
	e.p.check(ci, e.p.trust.Load(), nil)
	if ci.refused != "" {
		b.Fatal(ci.refused)
	}
	target, _ := url.Parse(e.upstream.URL)
	plain := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }, Transport: stubTransport{}}
	ctx := context.WithValue(context.Background(), connKey{}, ci)
	for _, tt := range []struct {
		name string
		h    http.Handler
	}{{"plain-go", plain}, {"minica", e.p}} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequestWithContext(ctx, "GET", "https://localhost/x", nil)
				r.Header = http.Header{"Accept": {"*/*"}, "User-Agent": {"bench"}, "X-Ssl-Client-Cn": {"spoof"}}
				w := httptest.NewRecorder()
				tt.h.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

// BenchmarkRewrite measures the proxy's Rewrite: strip the reserved
// headers, set the X-Forwarded-* and identity headers (minica profile), for
// a request with no headers but Host (as wrk sends) and with a few.
func BenchmarkRewrite(b *testing.B) {
	e := newEnv(b, nil)
	cert, _ := e.ca.Client(b, "alice")
	id, err := identity.New(cert, nil)
	if err != nil {
		b.Fatal(err)
	}
	headers := e.p.headers.Render(id)
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		in   http.Header
	}{
		{"bare", http.Header{}},
		{"browser", http.Header{
			"Accept": {"text/html"}, "User-Agent": {"Mozilla/5.0"}, "Accept-Encoding": {"gzip, br"},
			"Accept-Language": {"en"}, "Cookie": {"a=b"}, "X-Ssl-Client-Cn": {"spoof"},
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			in := httptest.NewRequestWithContext(ctx, "GET", "https://localhost/x", nil)
			in.Header = tt.in
			x := &exchange{r: in, headers: headers}
			e.p.exchanges.add(x)
			defer e.p.exchanges.remove(x)
			for b.Loop() {
				out := in.Clone(ctx)
				e.p.rewrite(&httputil.ProxyRequest{In: in, Out: out}, e.p.target)
			}
		})
	}
}

// cannedUpstream answers every request of every connection with the same
// bytes, allocating nothing per request, so that a benchmark's allocations
// are the proxy's.
func cannedUpstream(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	answer := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					// A request without a body ends with an empty line.
					line, err := br.ReadSlice('\n')
					if err != nil {
						return
					}
					if len(line) == 2 && line[0] == '\r' {
						if _, err := c.Write(answer); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// BenchmarkHandlerUpstream measures one request through the proxy's HTTP
// handler to an upstream on loopback that answers at once, directly and
// through ReverseProxy (both the short way).
func BenchmarkHandlerUpstream(b *testing.B) {
	addr := cannedUpstream(b)
	e := newEnv(b, func(c *Config) { c.Upstream, c.StandardForwarding = "http://"+addr, false })
	cert, _ := e.ca.Client(b, "alice")
	ci := &conn{certs: []*x509.Certificate{cert}}
	e.p.check(ci, e.p.trust.Load(), nil)
	if ci.refused != "" {
		b.Fatal(ci.refused)
	}
	h1 := e.p.rp.Transport.(*h1direct.Transport)
	ctx := context.WithValue(context.Background(), connKey{}, ci)
	for _, tt := range []struct {
		name string
		rt   http.RoundTripper
	}{{"reverseproxy", rpOnly{h1}}, {"direct", h1}} {
		b.Run(tt.name, func(b *testing.B) {
			e.p.rp.Transport = tt.rt
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequestWithContext(ctx, "GET", "https://localhost/x", nil)
				r.Header = http.Header{"Accept": {"*/*"}, "User-Agent": {"bench"}, "X-Ssl-Client-Cn": {"spoof"}}
				w := httptest.NewRecorder()
				e.p.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
	e.p.rp.Transport = h1
}
