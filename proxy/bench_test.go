package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"testing"
)

func BenchmarkNewIdentity(b *testing.B) {
	id := goldenIdentity(b)
	for b.Loop() {
		if _, err := NewIdentity(id.Cert, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRender(b *testing.B) {
	id := goldenIdentity(b)
	for _, p := range Profiles {
		h, err := NewHeaders(p, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(p, func(b *testing.B) {
			for b.Loop() {
				h.Render(id)
			}
		})
	}
}

func BenchmarkStrip(b *testing.B) {
	h, _ := NewHeaders("", nil)
	set := newReservedSet(h)
	in := http.Header{
		"Accept": {"*/*"}, "User-Agent": {"curl/8"}, "Accept-Encoding": {"gzip"},
		"Cookie": {"a=b"}, "X-Request-Id": {"1234"}, "Authorization": {"Bearer x"},
	}
	for b.Loop() {
		h := in.Clone()
		set.strip(h)
	}
}

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
