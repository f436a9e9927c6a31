package proxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"minica/internal/testca"
	"minica/revoke"
)

// TestReloadUnderLoad reloads the CRL, the CA bundle and the server
// certificate while clients send requests on kept-alive and new
// connections; run with -race. No request may fail.
func TestReloadUnderLoad(t *testing.T) {
	e := newEnv(t, nil)
	cert, key := e.ca.Client(t, "alice")
	bystander, _ := e.ca.Client(t, "bystander")
	const workers, requests, reloads = 4, 40, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers*requests)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keepAlive := w%2 == 0
			for i := range requests {
				c := e.client(cert, key, w == 0)
				if !keepAlive {
					c.Transport.(*http.Transport).DisableKeepAlives = true
				}
				resp, err := c.Get(e.url(fmt.Sprintf("/%d/%d", w, i)))
				if err != nil {
					errs <- err
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- fmt.Errorf("status %d", resp.StatusCode)
				}
			}
		}()
	}
	for i := range reloads {
		e.setCRL(e.makeCRL(bystander.SerialNumber))
		if i%5 == 0 {
			srv, srvKey := e.ca.Server(t, "localhost")
			e.srvCert.Store(&tls.Certificate{Certificate: [][]byte{srv.Raw}, PrivateKey: srvKey, Leaf: srv})
			cas := []*x509.Certificate{e.ca.Cert, testca.New(t, "Other").Cert}
			e.cas.Store(&cas)
		}
		if err := e.p.Reload(); err != nil {
			t.Errorf("Reload() error = %v", err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestServerCertificateReload(t *testing.T) {
	e := newEnv(t, nil)
	cert, key := e.ca.Client(t, "alice")
	open := e.client(cert, key, false)
	resp, err := open.Get(e.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	first := resp.TLS.PeerCertificates[0].SerialNumber

	srv, srvKey := e.ca.Server(t, "localhost")
	e.srvCert.Store(&tls.Certificate{Certificate: [][]byte{srv.Raw}, PrivateKey: srvKey})
	if err := e.p.Reload(); err != nil {
		t.Fatal(err)
	}
	resp, err = open.Get(e.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := resp.TLS.PeerCertificates[0].SerialNumber; got.Cmp(first) != 0 {
		t.Errorf("open connection changed certificate: %x; want %x", got, first)
	}
	resp, err = e.client(cert, key, false).Get(e.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.TLS.PeerCertificates[0].SerialNumber; got.Cmp(srv.SerialNumber) != 0 {
		t.Errorf("new connection: certificate %x; want the reloaded %x", got, srv.SerialNumber)
	}

	// A bad certificate keeps the last good one.
	e.srvCert.Store(&tls.Certificate{})
	if err := e.p.Reload(); !errors.Is(err, ErrNoLeaf) {
		t.Errorf("Reload() error = %v; want ErrNoLeaf", err)
	}
	if code, _ := e.get(e.client(cert, key, false), "/", nil); code != 200 {
		t.Errorf("status = %d; want 200", code)
	}
}

func TestCAReload(t *testing.T) {
	e := newEnv(t, nil)
	next := testca.New(t, "Next CA")
	cert, key := next.Client(t, "carol")
	if _, err := e.client(cert, key, false).Get(e.url("/")); err == nil {
		t.Fatal("client of an unknown CA got through")
	}
	cas := []*x509.Certificate{e.ca.Cert, next.Cert}
	e.cas.Store(&cas)
	if err := e.p.Reload(); err != nil {
		t.Fatal(err)
	}
	// The CRL in use is the first CA's: carol could not be revoked.
	if _, err := e.client(cert, key, false).Get(e.url("/")); err == nil {
		t.Error("client of a CA without a CRL got through")
	}
	e.waitLog("handshake-refused", "reason=no-crl-for-issuer", "cn=carol")
	e.setCRL(e.makeCRLWith(bigInt(1), e.now().Add(-time.Minute), e.now().Add(time.Hour), next))
	if err := e.p.Reload(); err != nil {
		t.Fatal(err)
	}
	if code, _ := e.get(e.client(cert, key, false), "/", nil); code != 200 {
		t.Errorf("with the CA's CRL: status = %d; want 200", code)
	}
	empty := []*x509.Certificate{}
	e.cas.Store(&empty)
	if err := e.p.Reload(); !errors.Is(err, ErrNoCA) {
		t.Errorf("Reload() error = %v; want ErrNoCA", err)
	}
}

func TestWebSocketUpgrade(t *testing.T) {
	e := newEnv(t, nil)
	ws := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" || r.Header.Get("X-Ssl-Client-Cn") != "alice" {
			http.Error(w, "want an upgrade from alice", 400)
			return
		}
		c, rw, err := switchProtocols(w)
		if err != nil {
			return
		}
		defer c.Close()
		line, _ := rw.ReadString('\n')
		rw.WriteString("echo " + line)
		rw.Flush()
	}))
	defer ws.Close()
	e2 := newEnvWithUpstream(t, e, ws.URL)
	cert, key := e.ca.Client(t, "alice")
	c := e2.dialHTTP1(t, cert, key)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 {
		t.Fatalf("status = %d; want 101", resp.StatusCode)
	}
	io.WriteString(c, "ping\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "echo ping\n" {
		t.Errorf("read %q, %v; want %q", line, err, "echo ping\n")
	}
	c.Close()
	e2.waitLog("request ", "uri=/ws", "status=101", "cn=alice")
}

// newEnvWithUpstream starts another proxy like e's but for upstream.
func newEnvWithUpstream(t *testing.T, e *env, upstream string) *env {
	t.Helper()
	e2 := newEnv(t, func(c *Config) { c.Upstream = upstream })
	// Share the CA so that certificates of e work with e2.
	cas := []*x509.Certificate{e.ca.Cert}
	e2.cas.Store(&cas)
	srv, srvKey := e.ca.Server(t, "localhost")
	e2.srvCert.Store(&tls.Certificate{Certificate: [][]byte{srv.Raw}, PrivateKey: srvKey})
	e2.setCRL(e.makeCRLWith(bigInt(1000), e.now().Add(-time.Minute), e.now().Add(time.Hour), e.ca))
	// The CRL must verify against the new CA bundle in one reload.
	if err := e2.p.Reload(); err != nil {
		t.Fatal(err)
	}
	e2.ca = e.ca
	return e2
}

func TestUnixAndHTTPSUpstreams(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Header.Get("X-Ssl-Client-Cn")+" "+r.Host)
	})
	t.Run("unix", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "up.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: handler}
		go srv.Serve(ln)
		defer srv.Close()
		e := newEnv(t, func(c *Config) { c.Upstream = "unix:" + sock })
		cert, key := e.ca.Client(t, "alice")
		if code, body := e.get(e.client(cert, key, false), "/", nil); code != 200 || body != "alice "+e.addr {
			t.Errorf("got %d %q; want 200 %q", code, body, "alice "+e.addr)
		}
	})
	t.Run("https", func(t *testing.T) {
		up := httptest.NewUnstartedServer(handler)
		up.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
		up.StartTLS()
		defer up.Close()
		pool := x509.NewCertPool()
		pool.AddCert(up.Certificate())
		e := newEnv(t, func(c *Config) { c.Upstream = up.URL; c.UpstreamRootCAs = pool })
		cert, key := e.ca.Client(t, "alice")
		if code, body := e.get(e.client(cert, key, false), "/", nil); code != 200 || !strings.HasPrefix(body, "alice ") {
			t.Errorf("got %d %q; want 200 from alice", code, body)
		}
		// Without the upstream's CA the proxy refuses to talk to it.
		e2 := newEnv(t, func(c *Config) { c.Upstream = up.URL; c.UpstreamRootCAs = x509.NewCertPool() })
		cert2, key2 := e2.ca.Client(t, "alice")
		if code, _ := e2.get(e2.client(cert2, key2, false), "/", nil); code != 502 {
			t.Errorf("unverified upstream: status = %d; want 502", code)
		}
	})
}

func TestReloadInterval(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ReloadInterval = 20 * time.Millisecond })
	cert, key := e.ca.Client(t, "simon")
	open := e.client(cert, key, false)
	if code, _ := e.get(open, "/", nil); code != 200 {
		t.Fatalf("status = %d; want 200", code)
	}
	e.setCRL(e.makeCRL(cert.SerialNumber))
	e.waitLog("reload ", "crl_number=2")
	e.waitLog("idle-closed", "cn=simon", "reason=revoked")
	if _, err := open.Get(e.url("/")); err == nil {
		t.Error("GET succeeded after the periodic reload; want refused")
	}
}

// TestCARotation replaces the CA bundle by a new CA: until a CRL of the new
// CA comes, the old bundle stays; then the new CA's CRL is accepted even
// with a lower number, as CRL numbers are per issuer.
func TestCARotation(t *testing.T) {
	e := newEnv(t, nil)
	e.setCRL(e.makeCRLWith(bigInt(50), e.now().Add(-time.Minute), e.now().Add(time.Hour), e.ca))
	if err := e.p.Reload(); err != nil {
		t.Fatal(err)
	}
	oldCert, oldKey := e.ca.Client(t, "old")
	next := testca.New(t, "Next CA")
	newCert, newKey := next.Client(t, "new")
	only := []*x509.Certificate{next.Cert}
	e.cas.Store(&only)
	err := e.p.Reload()
	if !errors.Is(err, ErrCRLUnverified) || !errors.Is(err, ErrCRLIssuerGone) {
		t.Fatalf("Reload() error = %v; want ErrCRLUnverified and ErrCRLIssuerGone", err)
	}
	if code, _ := e.get(e.client(oldCert, oldKey, false), "/", nil); code != 200 {
		t.Errorf("old CA client: status = %d; want 200 while the old bundle stays", code)
	}
	if _, err := e.client(newCert, newKey, false).Get(e.url("/")); err == nil {
		t.Error("new CA client got through before its CRL")
	}
	e.setCRL(e.makeCRLWith(bigInt(1), e.now().Add(-time.Minute), e.now().Add(time.Hour), next))
	if err := e.p.Reload(); err != nil {
		t.Fatalf("Reload() with the new CA's CRL: %v", err)
	}
	if code, _ := e.get(e.client(newCert, newKey, false), "/", nil); code != 200 {
		t.Errorf("new CA client: status = %d; want 200", code)
	}
	if _, err := e.client(oldCert, oldKey, false).Get(e.url("/")); err == nil {
		t.Error("old CA client got through after the rotation")
	}
}

func TestUnchangedCRLIsNotParsedAgain(t *testing.T) {
	var parses atomic.Int32
	e := newEnv(t, func(c *Config) {
		c.parseCRLFile = func(data []byte, cas []*x509.Certificate) ([]revoke.IssuedCRL, error) {
			parses.Add(1)
			return revoke.ParseCRLFile(data, cas)
		}
	})
	for range 3 {
		if err := e.p.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	if n := parses.Load(); n != 1 {
		t.Errorf("CRL file parsed %d times; want 1 (at New)", n)
	}
	e.setCRL(e.makeCRL())
	if err := e.p.Reload(); err != nil {
		t.Fatal(err)
	}
	if n := parses.Load(); n != 2 {
		t.Errorf("CRL file parsed %d times; want 2 after a new CRL", n)
	}
}
