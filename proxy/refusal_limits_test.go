package proxy

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"minica/identity"
	"minica/revoke"
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
				start := time.Now()
				resp, br := rawRequest(t, e.dialHTTP1(t, cert, key),
					"POST / HTTP/1.1\r\nHost: localhost\r\nAccept: "+accept+"\r\nContent-Length: 100000\r\n\r\nsome=data")
				if want := map[string]int{RefusalAlert: 403, RefusalPage: 496}[mode]; resp.StatusCode != want {
					t.Errorf("Accept %s: status %d; want %d", accept, resp.StatusCode, want)
				}
				_, err := br.ReadByte()
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
	for _, tt := range refusalCases {
		if tt.name == "not allowed" { // a rule's refusal: HTTP in both modes
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			alert := newEnv(t, nil)
			tc := tt.mk(t, alert)
			if tc.before != nil {
				tc.before(alert)
			}
			if _, err := alert.presentingClient(tc.cert, tc.key, false).Get(alert.url("/")); err == nil {
				t.Error("alert mode: an HTTP answer; want the handshake refused")
			}
			alert.waitLog("handshake-refused", "reason="+tc.reason+" ")
			page := pageEnv(t, nil)
			tc = tt.mk(t, page)
			if tc.before != nil {
				tc.before(page)
			}
			resp, err := page.presentingClient(tc.cert, tc.key, false).Get(page.url("/"))
			if err != nil {
				t.Fatalf("page mode: %v", err)
			}
			resp.Body.Close()
			if got := resp.Header.Get(RefusalHeader); got != tc.reason {
				t.Errorf("page mode: %s %q (status %d); want %q as in alert mode", RefusalHeader, got, resp.StatusCode, tc.reason)
			}
			if tc.cert != nil {
				// The log names the certificate refused, with its days
				// left: -2 in the second day after it expired.
				days := identity.DaysLeft(tc.cert.NotAfter, page.now())
				if tc.reason == ReasonExpired && days != -2 {
					t.Fatalf("days left of the expired certificate %d; want -2", days)
				}
				page.waitLog("request ", "serial="+identity.SerialHex(tc.cert.SerialNumber), "days_left="+itoa(days)+" ", "reason="+tc.reason)
			}
			// The histogram counts the certificates that passed only.
			if got := page.metric("minica_proxy_client_certificate_days_left_count"); !strings.HasSuffix(got, " 0") {
				t.Errorf("page mode: %q; want no observation of a refused certificate", got)
			}
		})
	}
}

// In page mode the limits bind clients without a certificate as any other:
// handshake slots per source, header time and size (--max-conns too, and
// more: see TestRefusalPageConnSlots); and the idle connection of a
// refused client is closed at the next reload, freeing its slot.
func TestRefusalPageLimits(t *testing.T) {
	t.Run("handshakes per source", func(t *testing.T) {
		e := pageEnv(t, func(c *Config) { c.MaxHandshakes = 2; c.MaxHandshakesPerSource = 1 })
		first, err := dialFrom("127.0.0.2", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer first.Close()
		e.waitMetric("minica_proxy_handshakes_in_progress", "1")
		second, err := dialFrom("127.0.0.2", e.addr)
		if err == nil {
			defer second.Close()
			if !closedWithin(second, 5*time.Second) {
				t.Error("a second handshaking connection of 127.0.0.2 was kept with MaxHandshakesPerSource 1")
			}
		}
		e.waitMetric(`minica_proxy_connections_shed_total{reason="source-limit"}`, "1")
	})
	t.Run("handshake time", func(t *testing.T) {
		e := pageEnv(t, func(c *Config) { c.HandshakeTimeout = 300 * time.Millisecond })
		raw, err := dialFrom("127.0.0.1", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if !closedWithin(raw, 5*time.Second) {
			t.Error("a connection that never started its handshake was kept")
		}
		e.waitLog("handshake-refused", "reason=handshake-timeout")
	})
	t.Run("header time and size", func(t *testing.T) {
		e := pageEnv(t, func(c *Config) { c.ReadHeaderTimeout = 300 * time.Millisecond; c.MaxHeaderBytes = 4096 })
		slow := e.dialHTTP1(t, nil, nil)
		if _, err := io.WriteString(slow, "GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: 1\r\n"); err != nil {
			t.Fatal(err)
		}
		if !closedWithin(slow, 5*time.Second) {
			t.Error("a client without a certificate kept its connection with its headers unfinished")
		}
		resp, _ := rawRequest(t, e.dialHTTP1(t, nil, nil), "GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: "+strings.Repeat("a", 16<<10)+"\r\n\r\n")
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("headers beyond MaxHeaderBytes: status %d; want 431", resp.StatusCode)
		}
	})
	t.Run("idle close", func(t *testing.T) {
		e := pageEnv(t, func(c *Config) { c.ReloadInterval = time.Hour })
		refused := e.dialHTTP1(t, nil, nil)
		resp, _ := rawRequest(t, refused, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
		if resp.StatusCode != StatusCertificateRequired {
			t.Fatalf("status %d; want 496", resp.StatusCode)
		}
		e.waitMetric("minica_proxy_open_connections", "1")
		// Until the server has set it idle, after its answer went out.
		for i := 0; ; i++ {
			if i == 50 {
				t.Fatal("the idle connection of a client without a certificate stayed open after 50 reloads")
			}
			e.reload(t)
			if closedWithin(refused, 100*time.Millisecond) {
				break
			}
		}
		e.waitLog("idle-closed", "reason=no-certificate")
		e.waitMetric("minica_proxy_open_connections", "0")
	})
}

// In page mode a connection whose client presented no valid certificate
// holds a --max-conns slot only until a client with one needs it: with
// every slot held by idle connections without a certificate, each
// request of a certificate holder, on a connection of its own, gets
// through, the oldest of them closed for it (conn-limit); a client without
// a certificate that comes then takes the slot of the oldest such
// connection and gets its page. A certificate holder's connection is
// never closed for another.
func TestRefusalPageConnSlots(t *testing.T) {
	const slots = 3
	e := pageEnv(t, func(c *Config) {
		c.MaxConns = slots
		// The idle connections would hold their slots this long.
		c.ReadHeaderTimeout, c.IdleTimeout = time.Minute, time.Minute
	})
	var idle []net.Conn // without a certificate, oldest first
	// fill dials one connection at a time, each holding its slot before
	// the next is dialed: a TLS 1.3 client's handshake ends before the
	// server's, so connections dialed back to back may take their slots
	// in another order, and idle would not be oldest first.
	// It first waits for the holder's last connection to give its slot
	// back, lest a new one take the slot of the oldest in its place.
	fill := func() {
		e.waitMetric("minica_proxy_open_connections", strconv.Itoa(len(idle)))
		for len(idle) < slots {
			idle = append(idle, e.dialHTTP1(t, nil, nil))
			e.waitMetric("minica_proxy_open_connections", strconv.Itoa(len(idle)))
		}
	}
	good, key := e.ca.Leaf(t, clientTemplate("good", time.Time{}, time.Time{}))
	holder := e.client(good, key, false)
	holder.Transport.(*http.Transport).DisableKeepAlives = true
	holder.Timeout = 5 * time.Second
	for i := range 3 {
		fill()
		resp, err := holder.Get(e.url("/"))
		if err != nil {
			t.Fatalf("request %d of a certificate holder with every slot held without a certificate: %v", i+1, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d of a certificate holder: status %d; want 200", i+1, resp.StatusCode)
		}
		if !closedWithin(idle[0], 5*time.Second) {
			t.Fatalf("request %d: the oldest connection without a certificate was kept", i+1)
		}
		idle = idle[1:]
	}
	e.waitMetric(`minica_proxy_connections_shed_total{reason="conn-limit"}`, "3")
	e.waitLog("connections-shed", "reason=conn-limit")

	fill()
	page := e.dialHTTP1(t, nil, nil)
	resp, _ := rawRequest(t, page, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
	if resp.StatusCode != StatusCertificateRequired {
		t.Fatalf("a client without a certificate with every slot taken: status %d; want 496", resp.StatusCode)
	}
	if !closedWithin(idle[0], 5*time.Second) {
		t.Fatal("the oldest connection without a certificate was kept for a newer one")
	}
	for _, c := range append(idle, page) {
		c.Close()
	}
	e.waitMetric("minica_proxy_open_connections", "0")

	// Every slot held by certificate holders: one more connection waits,
	// and none is closed for it.
	var held []*bufio.Reader
	var heldConns []net.Conn
	for len(heldConns) < slots {
		c := e.dialHTTP1(t, good, key)
		resp, br := rawRequest(t, c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
		if resp.StatusCode != 200 {
			t.Fatalf("a certificate holder's connection: status %d; want 200", resp.StatusCode)
		}
		held, heldConns = append(held, br), append(heldConns, c)
	}
	e.waitMetric("minica_proxy_open_connections", strconv.Itoa(slots))
	// The listener may have accepted it before the last slot was taken:
	// its handshake then ends, and it waits for a slot.
	raw, err := dialFrom("127.0.0.1", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	cfg := e.tlsConfig(nil, nil)
	cfg.NextProtos = []string{"http/1.1"}
	late := tls.Client(raw, cfg)
	late.SetDeadline(time.Now().Add(300 * time.Millisecond))
	if err := late.Handshake(); err == nil {
		io.WriteString(late, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
		if resp, err := http.ReadResponse(bufio.NewReader(late), nil); err == nil {
			t.Fatalf("a connection without a certificate was served (status %d) with every slot held by certificate holders", resp.StatusCode)
		}
	}
	for i, c := range heldConns {
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
			t.Fatalf("holder %d: %v", i, err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(held[i], nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("holder %d's connection after another came: %v; want it open and served", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// rawRequest writes req, written by hand, on c and reads one response
// (its body discarded); the reader holds what c sends after it.
func rawRequest(t *testing.T, c net.Conn, req string) (*http.Response, *bufio.Reader) {
	t.Helper()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to %.40q: %v", req, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, br
}

// Each reason of the table of docs/proxy.md "Refusal pages" has its
// status, its own code on the page and in X-Minica-Refusal, and the help
// link where a new certificate helps.
func TestRefusalReasonTable(t *testing.T) {
	e := pageEnv(t, nil)
	cert, _ := e.ca.Client(t, "tess")
	tests := []struct {
		reason string
		status int
		help   bool
	}{
		{ReasonNoCertificate, 496, true},
		{ReasonExpired, 495, true},
		{ReasonNotYetValid, 495, true},
		{ReasonRevoked, 495, true},
		{ReasonUnknownCA, 495, true},
		{ReasonWrongEKU, 495, true},
		{ReasonNoEKU, 495, true},
		{ReasonCACertificate, 495, true},
		{ReasonBadChain, 495, true},
		{ReasonNotAllowed, 403, false},
		{ReasonDaysLeft, 403, true},
		{ReasonCRLExpired, 503, false},
		{ReasonCRLNotYetValid, 503, false},
		{string(revoke.ReasonCRLMissing), 503, false},
		{ReasonNoCRL, 503, false},
	}
	for _, tt := range tests {
		c := cert
		if tt.reason == ReasonNoCertificate {
			c = nil
		}
		for _, accept := range []string{"text/html", ""} {
			r := httptest.NewRequest("GET", "/", nil)
			if accept != "" {
				r.Header.Set("Accept", accept)
			}
			w := httptest.NewRecorder()
			writeRefusal(w, r, e.p.pageFor(tt.reason, c, nil, e.now()))
			page := w.Body.String()
			if w.Code != tt.status || w.Header().Get(RefusalHeader) != tt.reason {
				t.Errorf("%s: status %d, %s %q; want %d and the reason", tt.reason, w.Code, RefusalHeader, w.Header().Get(RefusalHeader), tt.status)
			}
			if !strings.Contains(page, "Reason code ") || !strings.Contains(page, tt.reason) {
				t.Errorf("%s (Accept %q): the page does not name its reason code:\n%s", tt.reason, accept, page)
			}
			if got := strings.Contains(page, testHelpURL); got != tt.help {
				t.Errorf("%s (Accept %q): help link shown %v; want %v", tt.reason, accept, got, tt.help)
			}
			if c != nil && !strings.Contains(page, "tess") {
				t.Errorf("%s (Accept %q): the page does not name the certificate", tt.reason, accept)
			}
		}
	}
}
