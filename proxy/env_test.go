package proxy

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"minica/internal/testca"
)

// crlFunc is a CRL source of the bytes its function returns.
type crlFunc func() ([]byte, error)

func (f crlFunc) Current() ([]byte, error) { return f() }

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// standardEnv is the switch that runs the proxy's tests on the standard
// path too: set to a true value (scripts/test.sh's second pass sets it to
// 1), every proxy of newEnv forwards with httputil.ReverseProxy and
// net/http's Transport alone (Config.StandardForwarding), but where a
// test sets the field itself. minica proxy reads the same variable.
const standardEnv = "MINICA_PROXY_STANDARD"

// standardForwarding reports whether standardEnv is set to a true value.
func standardForwarding() bool {
	on, _ := strconv.ParseBool(os.Getenv(standardEnv))
	return on
}

// env is one proxy on 127.0.0.1 in front of a recording upstream, with an
// injected clock and CA, CRL and certificate sources the test can change.
type env struct {
	t        testing.TB
	ca       *testca.CA
	offset   atomic.Int64 // clock offset from real time, in nanoseconds
	crl      atomic.Pointer[[]byte]
	cas      atomic.Pointer[[]*x509.Certificate]
	srvCert  atomic.Pointer[tls.Certificate]
	p        *Proxy
	addr     string
	log      *syncBuffer
	upstream *httptest.Server
	lastReq  atomic.Pointer[http.Request]
	crlNum   int64
}

func (e *env) now() time.Time { return time.Now().Add(time.Duration(e.offset.Load())) }

func (e *env) advance(d time.Duration) { e.offset.Add(int64(d)) }

// makeCRL signs a CRL of the test CA revoking serials, with the next number.
func (e *env) makeCRL(serials ...*big.Int) []byte {
	e.crlNum++
	return e.makeCRLWith(big.NewInt(e.crlNum), e.now().Add(-time.Minute), e.now().Add(time.Hour), e.ca, serials...)
}

func (e *env) makeCRLWith(number *big.Int, this, next time.Time, ca *testca.CA, serials ...*big.Int) []byte {
	e.t.Helper()
	var entries []x509.RevocationListEntry
	for _, s := range serials {
		entries = append(entries, x509.RevocationListEntry{SerialNumber: s, RevocationTime: this})
	}
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number: number, ThisUpdate: this, NextUpdate: next, RevokedCertificateEntries: entries,
	}, ca.Cert, ca.Key)
	if err != nil {
		e.t.Fatalf("creating CRL: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der})
}

func (e *env) setCRL(data []byte) { e.crl.Store(&data) }

func newEnv(t testing.TB, mod func(*Config)) *env {
	t.Helper()
	e := &env{t: t, ca: testca.New(t, "Test CA"), log: &syncBuffer{}}
	e.setCRL(e.makeCRL())
	cas := []*x509.Certificate{e.ca.Cert}
	e.cas.Store(&cas)
	cert, key := e.ca.Server(t, "localhost")
	e.srvCert.Store(&tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert})

	e.upstream = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.lastReq.Store(r)
		w.Header().Set("X-Upstream", "yes")
		w.Write([]byte("hello from upstream"))
	}))
	t.Cleanup(e.upstream.Close)

	cfg := Config{
		Upstream: e.upstream.URL,
		LoadCA: func() ([]*x509.Certificate, error) {
			return *e.cas.Load(), nil
		},
		CRL: crlFunc(func() ([]byte, error) {
			data := *e.crl.Load()
			if data == nil {
				return nil, errors.New("no CRL file")
			}
			return data, nil
		}),
		LoadCert: func() (tls.Certificate, error) { return *e.srvCert.Load(), nil },
		Log:      e.log,
		Now:      e.now,
	}
	cfg.StandardForwarding = standardForwarding()
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	e.p = p
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve() error = %v", err)
		}
	})
	return e
}

// tlsConfig is a client TLS config presenting cert (if any) and trusting
// the test CA for the proxy's certificate.
func (e *env) tlsConfig(cert *x509.Certificate, key crypto.Signer) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(e.ca.Cert)
	cfg := &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}}
	}
	return cfg
}

// client returns an HTTP client for the proxy; h2 selects HTTP/2.
func (e *env) client(cert *x509.Certificate, key crypto.Signer, h2 bool) *http.Client {
	tr := &http.Transport{TLSClientConfig: e.tlsConfig(cert, key), ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func (e *env) url(path string) string { return "https://" + e.addr + path }

// dialHTTP1 opens a TLS connection presenting cert that speaks HTTP/1.1,
// for requests written by hand. It is closed when the test ends.
func (e *env) dialHTTP1(t testing.TB, cert *x509.Certificate, key crypto.Signer) *tls.Conn {
	t.Helper()
	cfg := e.tlsConfig(cert, key)
	cfg.NextProtos = []string{"http/1.1"}
	c, err := tls.Dial("tcp", e.addr, cfg)
	if err != nil {
		t.Fatal(err, e.log.String())
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// resumingClient returns a client that makes a new connection per request
// with a session cache, and its TLS config; it checks that the client's
// first request makes a full handshake and its second resumes the session.
func (e *env) resumingClient(t testing.TB, cert *x509.Certificate, key crypto.Signer) (*http.Client, *tls.Config) {
	t.Helper()
	cfg := e.tlsConfig(cert, key)
	cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for i, wantResume := range []bool{false, true} {
		resp, err := c.Get(e.url("/"))
		if err != nil {
			t.Fatalf("GET %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.TLS.DidResume != wantResume {
			t.Fatalf("GET %d: DidResume = %v; want %v", i, resp.TLS.DidResume, wantResume)
		}
	}
	return c, cfg
}

// get does one GET and returns status and body; a transport error fails.
func (e *env) get(c *http.Client, path string, hdr http.Header) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.url(path), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// waitLog waits, a bounded time, for a log line containing all of want.
func (e *env) waitLog(want ...string) string {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(e.log.String(), "\n") {
			ok := true
			for _, w := range want {
				if !strings.Contains(line, w) {
					ok = false
					break
				}
			}
			if ok && line != "" {
				return line
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.t.Fatalf("no log line with %q in:\n%s", want, e.log.String())
	return ""
}

func bigInt(n int64) *big.Int { return big.NewInt(n) }

// waitCount waits, a bounded time, until the log holds exactly n lines
// containing substr; handshake refusals are logged by the server after the
// client may already have seen the alert.
func (e *env) waitCount(substr string, n int) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	got := 0
	for time.Now().Before(deadline) {
		if got = strings.Count(e.log.String(), substr); got >= n {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got != n {
		e.t.Fatalf("%d log lines with %q; want %d:\n%s", got, substr, n, e.log.String())
	}
}

// eachProtocol runs f as subtests PREFIXhttp1 and PREFIXhttp2, with h2 set
// for the second.
func eachProtocol(t *testing.T, prefix string, f func(t *testing.T, h2 bool)) {
	t.Helper()
	for _, h2 := range []bool{false, true} {
		name := prefix + "http1"
		if h2 {
			name = prefix + "http2"
		}
		t.Run(name, func(t *testing.T) { f(t, h2) })
	}
}
