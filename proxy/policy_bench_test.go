package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"minica/identity"
	"minica/proxy/policy"
)

// benchPolicy writes a policy of n routes to dir and returns its file. The
// last route is the one benchmark requests take (host app.example.com,
// path /api, CN alice); the others are exact hosts, wildcards and other
// paths of that host, each with a rule of several clauses, so that a
// linear search would have to look at all of them.
func benchPolicy(tb testing.TB, dir, upstream string, n int) string {
	tb.Helper()
	type rule struct {
		CN          []string `json:"cn,omitempty"`
		OU          []string `json:"ou,omitempty"`
		EmailDomain []string `json:"email_domain,omitempty"`
		URI         []string `json:"uri,omitempty"`
		MinDaysLeft *int     `json:"min_days_left,omitempty"`
	}
	type route struct {
		Host     string `json:"host"`
		Path     string `json:"path,omitempty"`
		Upstream string `json:"upstream"`
		Allow    rule   `json:"allow"`
	}
	var routes []route
	other := rule{CN: []string{"bob", "carol", "dave"}, OU: []string{"Ops"}, EmailDomain: []string{"example.org"},
		URI: []string{"spiffe://example.com/ns/prod/*"}}
	for i := 0; len(routes) < n-1; i++ {
		switch i % 4 {
		case 0:
			routes = append(routes, route{Host: fmt.Sprintf("app%d.example.com", i), Upstream: upstream, Allow: other})
		case 1:
			routes = append(routes, route{Host: fmt.Sprintf("*.team%d.example.com", i), Upstream: upstream, Allow: other})
		case 2:
			routes = append(routes, route{Host: "app.example.com", Path: fmt.Sprintf("/api/v%d", i), Upstream: upstream, Allow: other})
		case 3:
			routes = append(routes, route{Host: fmt.Sprintf("svc%d.internal", i), Path: "/admin", Upstream: upstream, Allow: other})
		}
	}
	days := 0 // the test certificates have a day left: the check runs, and passes
	routes = append(routes, route{Host: "app.example.com", Path: "/api", Upstream: upstream,
		Allow: rule{CN: []string{"bob", "alice"}, MinDaysLeft: &days}})
	data, err := json.MarshalIndent(map[string]any{"routes": routes}, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	file := filepath.Join(dir, fmt.Sprintf("policy-%d.json", n))
	if err := os.WriteFile(file, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	return file
}

// BenchmarkPolicy1000 measures one request through the proxy's handler (as
// BenchmarkHandler, stub upstream, no TLS) under a policy of 1 route and of
// 1,000 routes: the cost of the policy per request is the difference.
func BenchmarkPolicy1000(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			e := newEnv(b, func(c *Config) {
				c.PolicyFile = benchPolicy(b, b.TempDir(), c.Upstream, n)
				c.Upstream = ""
			})
			for _, rp := range e.p.routing.Load().rps {
				if rp != nil {
					rp.Transport = stubTransport{}
				}
			}
			cert, _ := e.ca.Client(b, "alice")
			ci := &conn{certs: []*x509.Certificate{cert}}
			e.p.check(ci, e.p.trust.Load(), nil)
			if ci.refused != "" {
				b.Fatal(ci.refused)
			}
			ctx := context.WithValue(context.Background(), connKey{}, ci)
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequestWithContext(ctx, "GET", "https://app.example.com/api/v1/items/42", nil)
				r.TLS = &tls.ConnectionState{HandshakeComplete: true, ServerName: "app.example.com"}
				r.Header = http.Header{"Accept": {"*/*"}, "User-Agent": {"bench"}}
				w := httptest.NewRecorder()
				e.p.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}

// BenchmarkDecide measures the policy's decision alone (Policy.Decide) for
// the request of BenchmarkPolicy1000, under 1 and 1,000 routes.
func BenchmarkDecide(b *testing.B) {
	ca := newEnv(b, nil).ca
	cert, _ := ca.Client(b, "alice")
	id, err := identity.New(cert, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			pol, err := policy.LoadFile(benchPolicy(b, b.TempDir(), "http://127.0.0.1:1", n), policy.Options{})
			if err != nil {
				b.Fatal(err)
			}
			in := policy.Request{Host: "app.example.com", SNI: "app.example.com", Path: "/api/v1/items/42"}
			now := cert.NotBefore.Add(time.Hour)
			b.ReportAllocs()
			for b.Loop() {
				if d := pol.Decide(in, id, now); d.Reason != "" {
					b.Fatal(d.Reason)
				}
			}
		})
	}
}
