package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// closeWatcher is a client connection that reports when a read ends in an
// error: the server closed it.
type closeWatcher struct {
	net.Conn
	closed chan struct{}
}

func (c *closeWatcher) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		select {
		case <-c.closed:
		default:
			close(c.closed)
		}
	}
	return n, err
}

// watchedClient is e.client whose one connection reports its closing.
func (e *env) watchedClient(t *testing.T, name string, h2 bool) (*http.Client, *closeWatcher, *x509.Certificate) {
	cert, key := e.ca.Client(t, name)
	cfg := e.tlsConfig(cert, key)
	if h2 {
		cfg.NextProtos = []string{"h2"}
	} else {
		cfg.NextProtos = []string{"http/1.1"}
	}
	w := &closeWatcher{closed: make(chan struct{})}
	tr := &http.Transport{ForceAttemptHTTP2: h2, TLSClientConfig: cfg,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if w.Conn != nil {
				return nil, net.ErrClosed // one connection only
			}
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			w.Conn = c
			return &closeWatcher{Conn: c, closed: w.closed}, nil
		}}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}, w, cert
}

// A CRL that revokes a client closes its idle keep-alive and HTTP/2
// connections at the reload; those of other clients stay open.
func TestRevocationClosesIdleConnections(t *testing.T) {
	eachProtocol(t, "", func(t *testing.T, h2 bool) {
		e := newEnv(t, nil)
		simon, simonConn, simonCert := e.watchedClient(t, "simon", h2)
		alice, aliceConn, _ := e.watchedClient(t, "alice", h2)
		for _, c := range []*http.Client{simon, alice} {
			if code, _ := e.get(c, "/", nil); code != 200 {
				t.Fatalf("status = %d; want 200", code)
			}
		}
		e.setCRL(e.makeCRL(simonCert.SerialNumber))
		if err := e.p.Reload(); err != nil {
			t.Fatalf("Reload() error = %v", err)
		}
		select {
		case <-simonConn.closed:
		case <-time.After(5 * time.Second):
			t.Fatal("the revoked client's idle connection is still open 5s after the reload")
		}
		line := e.waitLog("idle-closed", "cn=simon", "reason=revoked")
		if !strings.Contains(line, "serial=") {
			t.Errorf("log line %q lacks the serial", line)
		}
		select {
		case <-aliceConn.closed:
			t.Fatal("another client's idle connection was closed")
		default:
		}
		if code, _ := e.get(alice, "/", nil); code != 200 {
			t.Errorf("alice after the reload: status = %d; want 200 on her connection", code)
		}
		var m strings.Builder
		e.p.writeMetrics(&m)
		if want := `minica_proxy_idle_connections_closed_total{reason="revoked"} 1`; !strings.Contains(m.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, m.String())
		}
	})
}
