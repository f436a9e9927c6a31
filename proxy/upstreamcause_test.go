package proxy

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// closedAddr is a 127.0.0.1 address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestUpstreamFailureCause checks that a request the upstream fails is
// logged with the cause (reason) and the error, and that in RefusalPage
// mode the 502/504 page names the cause in words, on the direct way and
// (MINICA_PROXY_STANDARD=1) on the standard one.
func TestUpstreamFailureCause(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(plain.Close)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })
	tests := []struct {
		name     string
		upstream string
		status   int
		reason   string
		words    string // on the page
	}{
		{"refused", "http://" + closedAddr(t), 502, ReasonUpstreamRefused, "refused the connection"},
		{"tls to plain http", "https://" + strings.TrimPrefix(plain.URL, "http://"), 502, ReasonUpstreamTLS, "does not speak TLS"},
		{"dns", "http://no-such-host.invalid:8080", 502, ReasonUpstreamDNS, "could not be resolved"},
		{"timeout", slow.URL, 504, ReasonUpstreamTimeout, "did not answer in time"},
	}
	for _, tt := range tests {
		for _, page := range []bool{false, true} {
			name := tt.name
			if page {
				name += "/page"
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, func(c *Config) {
					c.Upstream = tt.upstream
					c.UpstreamResponseHeaderTimeout = 300 * time.Millisecond
					if page {
						c.Refusal = RefusalPage
					}
				})
				cert, key := e.ca.Client(t, "alice")
				code, body := e.get(e.client(cert, key, false), "/", nil)
				if code != tt.status {
					t.Errorf("status %d; want %d", code, tt.status)
				}
				if page && !strings.Contains(body, tt.words) {
					t.Errorf("page %q does not say %q", body, tt.words)
				}
				if !page && body != http.StatusText(tt.status)+"\n" {
					t.Errorf("body %q; want %q", body, http.StatusText(tt.status)+"\n")
				}
				e.waitLog("request ", "cn=alice", "reason="+tt.reason, "error=")
			})
		}
	}
}

// TestUpstreamFailureNotARefusal checks that an upstream failure, logged
// with its cause, is not counted as a refusal of the client.
func TestUpstreamFailureNotARefusal(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Upstream = "http://" + closedAddr(t) })
	cert, key := e.ca.Client(t, "alice")
	if code, _ := e.get(e.client(cert, key, false), "/", nil); code != 502 {
		t.Fatalf("status %d; want 502", code)
	}
	e.waitLog("request ", "reason="+ReasonUpstreamRefused)
	var m bytes.Buffer
	e.p.writeMetrics(&m)
	if strings.Contains(m.String(), ReasonUpstreamRefused) {
		t.Errorf("metrics count the upstream failure as a refusal:\n%s", m.String())
	}
}

// TestUpstreamFailureJSONLog checks the cause and the error in a JSON
// request line.
func TestUpstreamFailureJSONLog(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Upstream = "http://" + closedAddr(t); c.LogFormat = LogJSON })
	cert, key := e.ca.Client(t, "alice")
	if code, _ := e.get(e.client(cert, key, false), "/", nil); code != 502 {
		t.Fatalf("status %d; want 502", code)
	}
	e.waitLog(`"event":"request"`, `"reason":"upstream-refused"`, `"error":"dial tcp `, "connection refused")
}

// TestDialUpstreams checks the start-up check of the upstream: a closed
// port and a name that does not resolve fail with their cause, a
// listening upstream passes.
func TestDialUpstreams(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(up.Close)
	tests := []struct {
		upstream string
		cause    string // "" for none
	}{
		{up.URL, ""},
		{"http://" + closedAddr(t), ReasonUpstreamRefused},
		{"http://no-such-host.invalid:8080", ReasonUpstreamDNS},
	}
	for _, tt := range tests {
		e := newEnv(t, func(c *Config) { c.Upstream = tt.upstream })
		failed := e.p.DialUpstreams(t.Context(), 2*time.Second)
		switch {
		case tt.cause == "" && len(failed) != 0:
			t.Errorf("%s: %+v; want no failure", tt.upstream, failed)
		case tt.cause != "" && (len(failed) != 1 || failed[0].Upstream != tt.upstream || failed[0].Cause != tt.cause || failed[0].Err == nil):
			t.Errorf("%s: %+v; want one failure of cause %s", tt.upstream, failed, tt.cause)
		}
	}
}
