package proxy

import (
	"bufio"
	"cmp"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"minica/internal/testca"
)

// closeWait bounds how long a test waits for a cut it expects; a cut takes
// milliseconds, the bound only keeps a failing test from hanging.
const closeWait = 5 * time.Second

// streamUpstream answers /ws with a WebSocket upgrade (101, then it echoes
// each line), /sse with an event stream (a line every 5 ms until the
// request ends, for 10 s at most) and /poll not at all (until the request
// ends, for 10 s at most). The CN of each exchange is sent on started when
// it reaches the upstream, and on ended when it ends on the upstream's side.
func streamUpstream(t *testing.T) (url string, started, ended <-chan string) {
	t.Helper()
	begun, done := make(chan string, 64), make(chan string, 64)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case begun <- r.Header.Get("X-Ssl-Client-Cn"):
		default:
		}
		defer func() {
			select {
			case done <- r.Header.Get("X-Ssl-Client-Cn"):
			default:
			}
		}()
		switch r.URL.Path {
		case "/ws":
			if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
				http.Error(w, "want an upgrade", http.StatusBadRequest)
				return
			}
			c, rw, err := switchProtocols(w)
			if err != nil {
				return
			}
			defer c.Close()
			for range 1000 {
				line, err := rw.ReadString('\n')
				if err != nil {
					return
				}
				rw.WriteString("echo " + line)
				if rw.Flush() != nil {
					return
				}
			}
		case "/poll":
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		case "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			rc := http.NewResponseController(w)
			for i := range 2000 {
				fmt.Fprintf(w, "data: %d\n", i)
				if rc.Flush() != nil {
					return
				}
				select {
				case <-r.Context().Done():
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}
	}))
	t.Cleanup(up.Close)
	return up.URL, begun, done
}

// tunnel is a client's WebSocket tunnel through the proxy, over HTTP/1.1.
type tunnel struct {
	c  *tls.Conn
	br *bufio.Reader
}

func openTunnel(t *testing.T, e *env, cert *x509.Certificate, key crypto.Signer) *tunnel {
	t.Helper()
	c := e.dialHTTP1(t, cert, key)
	c.SetDeadline(time.Now().Add(closeWait))
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	tn := &tunnel{c: c, br: bufio.NewReader(c)}
	resp, err := http.ReadResponse(tn.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: status = %d; want 101", resp.StatusCode)
	}
	if err := tn.ping("hello"); err != nil {
		t.Fatalf("new tunnel: %v", err)
	}
	return tn
}

// ping sends a line through the tunnel and reads its echo.
func (tn *tunnel) ping(s string) error {
	tn.c.SetDeadline(time.Now().Add(closeWait))
	if _, err := io.WriteString(tn.c, s+"\n"); err != nil {
		return err
	}
	line, err := tn.br.ReadString('\n')
	if err != nil {
		return err
	}
	if line != "echo "+s+"\n" {
		return fmt.Errorf("read %q; want %q", line, "echo "+s+"\n")
	}
	return nil
}

// stream is a client's event stream through the proxy: a goroutine reads
// it, counting lines, and reports the error that ended it.
type stream struct {
	lines atomic.Int64
	end   chan error
}

func openStream(t *testing.T, e *env, cert *x509.Certificate, key crypto.Signer, h2 bool) *stream {
	t.Helper()
	c := e.client(cert, key, h2)
	c.Timeout = 0 // the stream outlives any client timeout; the test bounds it
	resp, err := c.Get(e.url("/sse"))
	if err != nil {
		t.Fatal(err)
	}
	if wantMajor := map[bool]int{false: 1, true: 2}[h2]; resp.StatusCode != 200 || resp.ProtoMajor != wantMajor {
		t.Fatalf("stream: %d over %s; want 200 over HTTP/%d", resp.StatusCode, resp.Proto, wantMajor)
	}
	s := &stream{end: make(chan error, 1)}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			s.lines.Add(1)
		}
		s.end <- sc.Err()
	}()
	if !s.flowing() {
		t.Fatal("new stream: no lines")
	}
	return s
}

// flowing reports whether the stream delivers two more lines, waiting a
// bounded time.
func (s *stream) flowing() bool {
	want := s.lines.Load() + 2
	for deadline := time.Now().Add(closeWait); time.Now().Before(deadline); {
		if s.lines.Load() >= want {
			return true
		}
		select {
		case <-s.end:
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
	return false
}

// closed waits a bounded time for the stream to end, and returns its error.
func (s *stream) closed() error {
	select {
	case err := <-s.end:
		if err == nil {
			err = io.EOF
		}
		return err
	case <-time.After(closeWait):
		return nil
	}
}

// clientValidFor issues a client certificate of e's CA valid for d from
// e's clock.
func clientValidFor(t *testing.T, e *env, cn string, d time.Duration) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	return e.ca.Leaf(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		NotBefore:   e.now().Add(-time.Hour),
		NotAfter:    e.now().Add(d),
	})
}

// TestOpenExchangesAreClosed opens, for alice and bob, a WebSocket tunnel
// over HTTP/1.1 and an event stream over HTTP/1.1 and HTTP/2; then alice is
// revoked, her certificate expires, the CRL expires or the CA bundle is
// replaced. Every exchange of the refused clients must be closed on both
// sides, with a log line and a metric each, and the others must go on.
func TestOpenExchangesAreClosed(t *testing.T) {
	tests := []struct {
		name string
		cfg  func(*Config)
		// trigger refuses alice (and bob when bobToo) and makes the
		// proxy check its open exchanges.
		trigger func(t *testing.T, e *env, alice *x509.Certificate)
		reason  string
		bobToo  bool
		// aliceFor is the validity of alice's certificate from now,
		// 30 minutes if 0; bob's is 48 hours.
		aliceFor time.Duration
	}{
		{name: "revoked on reload", reason: ReasonRevoked, trigger: func(t *testing.T, e *env, alice *x509.Certificate) {
			e.setCRL(e.makeCRL(alice.SerialNumber))
			if err := e.p.Reload(); err != nil {
				t.Fatalf("Reload() error = %v", err)
			}
		}},
		{name: "revoked on the reload interval", reason: ReasonRevoked,
			cfg: func(c *Config) { c.ReloadInterval = 20 * time.Millisecond },
			trigger: func(t *testing.T, e *env, alice *x509.Certificate) {
				e.setCRL(e.makeCRL(alice.SerialNumber))
				e.waitCount("exchange-closed remote=", 3)
			}},
		{name: "CA replaced on reload", reason: ReasonUnknownCA, bobToo: true, trigger: func(t *testing.T, e *env, _ *x509.Certificate) {
			next := testca.New(t, "Next CA")
			cas := []*x509.Certificate{next.Cert}
			e.cas.Store(&cas)
			e.setCRL(e.makeCRLWith(bigInt(1), e.now().Add(-time.Minute), e.now().Add(time.Hour), next))
			if err := e.p.Reload(); err != nil {
				t.Fatalf("Reload() error = %v", err)
			}
		}},
		{name: "certificate expired, then a reload", reason: ReasonExpired, trigger: func(t *testing.T, e *env, _ *x509.Certificate) {
			e.advance(45 * time.Minute) // alice's certificate ends in 30, the CRL in 60
			if err := e.p.Reload(); err != nil {
				t.Fatalf("Reload() error = %v", err)
			}
		}},
		{name: "certificate expires without a reload", reason: ReasonExpired, trigger: func(t *testing.T, e *env, alice *x509.Certificate) {
			// The watcher, woken after the clock moved, checks when the
			// certificate ends, in 200 ms.
			e.advance(alice.NotAfter.Sub(e.now()) - 200*time.Millisecond)
			e.p.exchanges.poke()
			e.waitCount("exchange-closed remote=", 3)
		}},
		{name: "certificate expired, the clock jumped", reason: ReasonExpired, trigger: func(t *testing.T, e *env, _ *x509.Certificate) {
			e.advance(45 * time.Minute)
			e.p.exchanges.poke()
			e.waitCount("exchange-closed remote=", 3)
		}},
		{name: "CRL expired, then a reload", reason: ReasonCRLExpired, bobToo: true, trigger: func(t *testing.T, e *env, _ *x509.Certificate) {
			e.advance(2 * time.Hour)
			e.p.Reload()
		}},
		{name: "CRL expires without a reload", reason: ReasonCRLExpired, bobToo: true, aliceFor: 48 * time.Hour,
			cfg: func(c *Config) { c.CRLGrace = 10 * time.Minute },
			trigger: func(t *testing.T, e *env, _ *x509.Certificate) {
				// The CRL ends in an hour, its grace 10 minutes later.
				end := e.p.trust.Load().crl.NextUpdate().Add(10 * time.Minute)
				e.advance(end.Sub(e.now()) - 200*time.Millisecond)
				e.p.exchanges.poke()
				e.waitCount("exchange-closed remote=", 6)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			upstream, _, ended := streamUpstream(t)
			e := newEnv(t, func(c *Config) {
				c.Upstream = upstream
				if tt.cfg != nil {
					tt.cfg(c)
				}
			})
			alice, aliceKey := clientValidFor(t, e, "alice", cmp.Or(tt.aliceFor, 30*time.Minute))
			bob, bobKey := clientValidFor(t, e, "bob", 48*time.Hour)
			type open struct {
				cn     string
				tunnel *tunnel
				h1, h2 *stream
			}
			var clients []open
			for _, c := range []struct {
				cn   string
				cert *x509.Certificate
				key  crypto.Signer
			}{{"alice", alice, aliceKey}, {"bob", bob, bobKey}} {
				clients = append(clients, open{
					cn:     c.cn,
					tunnel: openTunnel(t, e, c.cert, c.key),
					h1:     openStream(t, e, c.cert, c.key, false),
					h2:     openStream(t, e, c.cert, c.key, true),
				})
			}

			tt.trigger(t, e, alice)

			var cut []string
			for _, c := range clients {
				refused := c.cn == "alice" || tt.bobToo
				if !refused {
					if err := c.tunnel.ping("still there"); err != nil {
						t.Errorf("%s's tunnel: %v; want it open", c.cn, err)
					}
					for proto, s := range map[string]*stream{"HTTP/1.1": c.h1, "HTTP/2": c.h2} {
						if !s.flowing() {
							t.Errorf("%s's stream over %s ended; want it open", c.cn, proto)
						}
					}
					continue
				}
				cut = append(cut, c.cn, c.cn, c.cn)
				err := c.tunnel.ping("still there")
				if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
					t.Errorf("%s's tunnel: ping error = %v; want it closed", c.cn, err)
				}
				for proto, s := range map[string]*stream{"HTTP/1.1": c.h1, "HTTP/2": c.h2} {
					if err := s.closed(); err == nil || err == io.EOF {
						t.Errorf("%s's stream over %s: error = %v; want it cut", c.cn, proto, err)
					}
				}
			}
			// The upstream's side of every cut exchange ends too.
			var gone []string
			for len(gone) < len(cut) {
				select {
				case cn := <-ended:
					gone = append(gone, cn)
					continue
				case <-time.After(closeWait):
				}
				break
			}
			slices.Sort(gone)
			if !slices.Equal(gone, cut) {
				t.Errorf("upstream exchanges ended: %q; want %q", gone, cut)
			}
			e.waitCount("exchange-closed remote=", len(cut))
			for _, cn := range slices.Compact(slices.Clone(cut)) {
				e.waitLog("exchange-closed ", "cn="+cn, "reason="+tt.reason, "uri=/ws", "proto=HTTP/1.1")
				e.waitLog("exchange-closed ", "cn="+cn, "reason="+tt.reason, "uri=/sse", "proto=HTTP/2.0")
			}
			var m strings.Builder
			e.p.writeMetrics(&m)
			want := fmt.Sprintf("minica_proxy_exchanges_closed_total{reason=%q} %d\n", tt.reason, len(cut))
			if !strings.Contains(m.String(), want) {
				t.Errorf("metrics lack %q:\n%s", want, m.String())
			}
		})
	}
}

// TestPendingRequestIsClosed revokes a client whose request waits for the
// upstream's answer (a long poll): the request is closed, and logged as
// refused.
func TestPendingRequestIsClosed(t *testing.T) {
	eachProtocol(t, "", func(t *testing.T, h2 bool) {
		upstream, started, ended := streamUpstream(t)
		e := newEnv(t, func(c *Config) { c.Upstream = upstream })
		cert, key := e.ca.Client(t, "alice")
		c := e.client(cert, key, h2)
		errc := make(chan error, 1)
		go func() {
			resp, err := c.Get(e.url("/poll"))
			if err == nil {
				resp.Body.Close()
				err = fmt.Errorf("got %s; want the connection closed", resp.Status)
			}
			errc <- err
		}()
		select {
		case <-started:
		case err := <-errc:
			t.Fatalf("GET /poll: %v", err)
		case <-time.After(closeWait):
			t.Fatal("GET /poll did not reach the upstream")
		}
		e.setCRL(e.makeCRL(cert.SerialNumber))
		if err := e.p.Reload(); err != nil {
			t.Fatalf("Reload() error = %v", err)
		}
		select {
		case err := <-errc:
			if strings.Contains(err.Error(), "want the connection closed") {
				t.Error(err)
			}
		case <-time.After(closeWait):
			t.Fatal("GET /poll still waiting; want it closed")
		}
		select {
		case <-ended:
		case <-time.After(closeWait):
			t.Error("the upstream's side still waiting; want it closed")
		}
		e.waitLog("exchange-closed ", "cn=alice", "uri=/poll", "reason=revoked")
		e.waitLog("request ", "cn=alice", "uri=/poll", "status=403", "reason=revoked")
	})
}
