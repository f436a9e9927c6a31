package proxy

import (
	"bufio"
	"crypto"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"minica/internal/testca"
)

// In page mode a client without a certificate that starts a request body
// and then trickles it cannot hold its connection (and its --max-conns
// slot) past BodyTimeout: the proxy does not wait for the body of a
// request it refuses. Nor can a valid client refused by the rules, in
// alert mode.
func TestRefusedSlowBodyIsBounded(t *testing.T) {
	for _, mode := range RefusalModes {
		t.Run(mode, func(t *testing.T) {
			var reached atomic.Int32
			e := newEnv(t, func(c *Config) {
				c.Refusal = mode
				c.BodyTimeout = 300 * time.Millisecond
				c.AllowCN = []string{"good"}
			})
			e.upstream.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) })
			cert, key := e.ca.Client(t, "otto") // not allowed
			if mode == RefusalPage {
				cert, key = nil, nil // no certificate at all
			}
			for _, accept := range []string{"text/html", "*/*"} {
				c := e.dialHTTP1(t, cert, key)
				_, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: localhost\r\nAccept: "+accept+"\r\nContent-Length: 100000\r\n\r\nsome=data")
				if err != nil {
					t.Fatal(err)
				}
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				start := time.Now()
				br := bufio.NewReader(c)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("Accept %s: no answer: %v", accept, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if want := map[string]int{RefusalAlert: 403, RefusalPage: 496}[mode]; resp.StatusCode != want {
					t.Errorf("Accept %s: status %d; want %d", accept, resp.StatusCode, want)
				}
				_, err = br.ReadByte()
				if err == nil || strings.Contains(err.Error(), "timeout") {
					t.Errorf("Accept %s: the connection stayed open %v with its body unsent (%v); want it closed after BodyTimeout", accept, time.Since(start).Round(time.Millisecond), err)
				}
			}
			if n := reached.Load(); n != 0 {
				t.Errorf("the upstream got %d requests of a refused client", n)
			}
		})
	}
}

// In page mode, requests pipelined on one connection after a refused one
// are each refused in turn, a WebSocket upgrade among them: none reaches
// the upstream, and the connection serves the next request.
func TestRefusalPagePipelined(t *testing.T) {
	var reached atomic.Int32
	e := pageEnv(t, nil)
	e.upstream.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) })
	c := e.dialHTTP1(t, nil, nil)
	reqs := "POST /a HTTP/1.1\r\nHost: localhost\r\nContent-Length: 9\r\n\r\nsome=data" +
		"GET /b HTTP/1.1\r\nHost: localhost\r\nX-SSL-Client-CN: good\r\n\r\n" +
		"GET /ws HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n" +
		"GET /c HTTP/1.1\r\nHost: localhost\r\nAccept: text/html\r\n\r\n"
	if _, err := io.WriteString(c, reqs); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for _, path := range []string{"/a", "/b", "/ws", "/c"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != StatusCertificateRequired || resp.Header.Get(RefusalHeader) != ReasonNoCertificate {
			t.Errorf("%s: status %d, %s %q; want 496 no-certificate", path, resp.StatusCode, RefusalHeader, resp.Header.Get(RefusalHeader))
		}
		e.waitLog("request ", "uri="+path+" ", "status=496", "reason=no-certificate")
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the upstream got %d requests of a client without a certificate", n)
	}
}

// One decision: each certificate refused in the handshake in alert mode
// is refused for the same reason in page mode, where the HTTP layer
// judges it.
func TestRefusalModesAgree(t *testing.T) {
	tests := []struct {
		name   string
		reason string
		mk     func(t *testing.T, e *env) (*x509.Certificate, crypto.Signer)
	}{
		{"no certificate", ReasonNoCertificate, func(t *testing.T, e *env) (*x509.Certificate, crypto.Signer) { return nil, nil }},
		{"expired", ReasonExpired, func(t *testing.T, e *env) (*x509.Certificate, crypto.Signer) {
			return e.ca.Leaf(t, clientTemplate("ella", e.now().Add(-48*time.Hour), e.now().Add(-time.Hour)))
		}},
		{"not yet valid", ReasonNotYetValid, func(t *testing.T, e *env) (*x509.Certificate, crypto.Signer) {
			return e.ca.Leaf(t, clientTemplate("nora", e.now().Add(2*time.Hour), e.now().Add(48*time.Hour)))
		}},
		{"revoked", ReasonRevoked, func(t *testing.T, e *env) (*x509.Certificate, crypto.Signer) {
			cert, key := e.ca.Client(t, "rita")
			e.setCRL(e.makeCRL(cert.SerialNumber))
			e.reload(t)
			return cert, key
		}},
		{"unknown CA", ReasonUnknownCA, func(t *testing.T, e *env) (*x509.Certificate, crypto.Signer) {
			return testca.New(t, "Stranger CA").Client(t, "uma")
		}},
		{"server certificate", ReasonWrongEKU, func(t *testing.T, e *env) (*x509.Certificate, crypto.Signer) {
			return e.ca.Server(t, "web.example.com")
		}},
		{"no EKU", ReasonNoEKU, func(t *testing.T, e *env) (*x509.Certificate, crypto.Signer) {
			tmpl := clientTemplate("noeku", time.Time{}, time.Time{})
			tmpl.ExtKeyUsage = nil
			return e.ca.Leaf(t, tmpl)
		}},
		{"CRL expired", ReasonCRLExpired, func(t *testing.T, e *env) (*x509.Certificate, crypto.Signer) {
			e.advance(2 * time.Hour)
			return e.ca.Client(t, "carl")
		}},
		{"CA certificate", ReasonCACertificate, func(t *testing.T, e *env) (*x509.Certificate, crypto.Signer) {
			return e.ca.Cert, e.ca.Key
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			alert := newEnv(t, nil)
			cert, key := tt.mk(t, alert)
			if _, err := alert.presentingClient(cert, key, false).Get(alert.url("/")); err == nil {
				t.Error("alert mode: an HTTP answer; want the handshake refused")
			}
			alert.waitLog("handshake-refused", "reason="+tt.reason+" ")
			page := pageEnv(t, nil)
			cert, key = tt.mk(t, page)
			resp, err := page.presentingClient(cert, key, false).Get(page.url("/"))
			if err != nil {
				t.Fatalf("page mode: %v", err)
			}
			resp.Body.Close()
			if got := resp.Header.Get(RefusalHeader); got != tt.reason {
				t.Errorf("page mode: %s %q (status %d); want %q as in alert mode", RefusalHeader, got, resp.StatusCode, tt.reason)
			}
		})
	}
}
