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
		case <-time.After(10 * time.Second):
			t.Fatal("the revoked client's idle connection is still open 10s after the reload")
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
		// Closed connections leave the registry.
		alice.Transport.(*http.Transport).CloseIdleConnections()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			e.p.idle.mu.Lock()
			n := len(e.p.idle.conns)
			e.p.idle.mu.Unlock()
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d connections still tracked after every client closed", n)
			}
		}
	})
}

// A connection that http.Server has not yet called idle when the reload's
// sweep passes (its response is out, the client has read it) is closed when
// it turns idle: a client that reloads right after a response must not keep
// its connection. The server's own ConnState calls race with the reload, so
// the test makes them itself, on a connection the server has left idle.
func TestRevocationClosesConnectionTurningIdleAfterSweep(t *testing.T) {
	eachProtocol(t, "", func(t *testing.T, h2 bool) {
		e := newEnv(t, nil)
		simon, simonConn, simonCert := e.watchedClient(t, "simon", h2)
		if code, _ := e.get(simon, "/", nil); code != 200 {
			t.Fatalf("status = %d; want 200", code)
		}
		// Wait for the server to call it idle, then make it active again,
		// as it is between the response and that call.
		var c net.Conn
		for deadline := time.Now().Add(10 * time.Second); c == nil; time.Sleep(5 * time.Millisecond) {
			e.p.idle.mu.Lock()
			for k, v := range e.p.idle.conns {
				if v.idle {
					c = k
				}
			}
			e.p.idle.mu.Unlock()
			if c == nil && time.Now().After(deadline) {
				t.Fatal("the connection was not idle 10s after its response")
			}
		}
		e.p.connState(c, http.StateActive)
		e.setCRL(e.makeCRL(simonCert.SerialNumber))
		if err := e.p.Reload(); err != nil {
			t.Fatalf("Reload() error = %v", err)
		}
		select {
		case <-simonConn.closed:
			t.Fatal("the sweep closed a connection that was not idle")
		default:
		}
		e.p.connState(c, http.StateIdle)
		select {
		case <-simonConn.closed:
		case <-time.After(10 * time.Second):
			t.Fatal("the revoked client's connection is still open 10s after it turned idle past the reload's sweep")
		}
		e.waitLog("idle-closed", "cn=simon", "reason=revoked")
	})
}
