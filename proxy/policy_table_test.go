package proxy

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"minica/identity"
)

// policyEnv is a proxy under a policy of overlapping routes, in front of
// three upstreams: plain http, https verified against its upstream_ca, and
// a unix socket. Each answers "up:" and the request URI it got, and counts
// its requests.
type policyEnv struct {
	*env
	hits    atomic.Int64
	host    atomic.Pointer[string] // the Host of the last request an upstream got
	dir     string
	file    string
	clients sync.Map // clientKey -> *http.Client
	certs   map[string]tls.Certificate
}

// tablePolicy is the policy of overlapping routes the table runs under,
// with HTTP/ and HTTPS/ for the upstreams' URLs, UNIX for the socket's, and
// SERIAL and FINGERPRINT for a client's serial and the CA's fingerprint.
// Package policy seeds its fuzz target with it too.
var tablePolicy = filepath.Join("policy", "testdata", "table.json")

var tableHosts = []string{"wiki.example.com", "api.example.com", "*.apps.example.com", "ci.example.com",
	"ca.example.com", "ca2.example.com", "other.example.com", "localhost"}

func newPolicyEnv(t *testing.T) *policyEnv {
	t.Helper()
	pe := &policyEnv{dir: t.TempDir(), certs: map[string]tls.Certificate{}}
	answer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pe.hits.Add(1)
		host := r.Host
		pe.host.Store(&host)
		io.WriteString(w, "up:"+r.RequestURI)
	})
	plain := httptest.NewServer(answer)
	t.Cleanup(plain.Close)
	secure := httptest.NewTLSServer(answer)
	t.Cleanup(secure.Close)
	sock := filepath.Join(pe.dir, "app.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	unix := &httptest.Server{Listener: ln, Config: &http.Server{Handler: answer}}
	unix.Start()
	t.Cleanup(unix.Close)
	os.WriteFile(filepath.Join(pe.dir, "upstream-ca.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw}), 0o644)
	// A policy that refuses everyone until the CA's fingerprint is known
	// (the env makes the CA), then the table's policy by a reload.
	pe.file = filepath.Join(pe.dir, "policy.json")
	pe.writePolicy(t, `{"routes": [{"host": "*", "refuse": true}]}`)
	pe.env = newEnv(t, func(c *Config) {
		c.PolicyFile, c.Upstream = pe.file, ""
	})
	srv, srvKey := pe.ca.Leaf(t, &x509.Certificate{Subject: pkix.Name{CommonName: "front"}, DNSNames: tableHosts,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	pe.srvCert.Store(&tls.Certificate{Certificate: [][]byte{srv.Raw}, PrivateKey: srvKey, Leaf: srv})
	table, err := os.ReadFile(tablePolicy)
	if err != nil {
		t.Fatal(err)
	}
	pol := strings.NewReplacer("HTTPS/", secure.URL+"/", "HTTP/", plain.URL+"/",
		`"UNIX"`, `"unix:`+sock+`"`, "SERIAL", "0A:1B:2C", "FINGERPRINT", identity.Fingerprint(pe.ca.Cert)).Replace(string(table))
	pe.writePolicy(t, pol)
	if err := pe.p.Reload(); err != nil {
		t.Fatalf("Reload() error = %v", err)
	}
	if n := len(pe.p.routing.Load().pol.Routes); n != 10 {
		t.Fatalf("policy has %d routes after the reload; want 10\n%s", n, pe.log.String())
	}
	return pe
}

func (pe *policyEnv) writePolicy(t *testing.T, body string) {
	t.Helper()
	if err := os.WriteFile(pe.file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

type clientKey struct {
	cert, sni string
	h2        bool
}

// client returns a client presenting the certificate named cert, sending
// the TLS server name sni (none if "").
func (pe *policyEnv) clientFor(t *testing.T, cert, sni string, h2 bool) *http.Client {
	k := clientKey{cert, sni, h2}
	if c, ok := pe.clients.Load(k); ok {
		return c.(*http.Client)
	}
	leaf := pe.certs[cert]
	cfg := pe.tlsConfig(leaf.Leaf, leaf.PrivateKey.(crypto.Signer))
	cfg.ServerName = sni
	if sni == "" {
		cfg.ServerName = "127.0.0.1"
	}
	tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	pe.clients.Store(k, c)
	return c
}

// issue makes the client certificate called name from tmpl.
func (pe *policyEnv) issue(t *testing.T, name string, tmpl *x509.Certificate) {
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	cert, key := pe.ca.Leaf(t, tmpl)
	pe.certs[name] = tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}
}

// TestPolicyTable sends each (certificate, URL) through the proxy under
// the overlapping routes of tablePolicy, over HTTP/1.1 and HTTP/2: the
// status, and for a request let through the route (the upstream path
// prefix) and the clean path the upstream got; a refused request never
// reaches an upstream.
func TestPolicyTable(t *testing.T) {
	pe := newPolicyEnv(t)
	now := time.Now()
	spiffe := func(s string) []*url.URL { u, _ := url.Parse(s); return []*url.URL{u} }
	for name, tmpl := range map[string]*x509.Certificate{
		"alice":      {Subject: pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"Ops"}}, EmailAddresses: []string{"alice@Example.COM"}},
		"bob":        {Subject: pkix.Name{CommonName: "bob"}, EmailAddresses: []string{"bob@example.com"}},
		"eve":        {Subject: pkix.Name{CommonName: "eve", OrganizationalUnit: []string{"ops"}}, EmailAddresses: []string{"eve@example.org"}},
		"mallory":    {Subject: pkix.Name{CommonName: "mallory"}, EmailAddresses: []string{"mallory@example.com.evil.org"}},
		"svc":        {Subject: pkix.Name{CommonName: "web"}, URIs: spiffe("spiffe://example.com/ns/prod/sa/web")},
		"svc-dev":    {Subject: pkix.Name{CommonName: "web"}, URIs: spiffe("spiffe://example.com/ns/dev/sa/web")},
		"svc-trick":  {Subject: pkix.Name{CommonName: "web"}, URIs: spiffe("spiffe://example.com/ns/production/sa/web")},
		"svc-dots":   {Subject: pkix.Name{CommonName: "web"}, URIs: spiffe("spiffe://example.com/ns/prod/../dev/web")},
		"svc-bare":   {Subject: pkix.Name{CommonName: "web"}, URIs: spiffe("spiffe://example.com/ns/prod/")},
		"zoe":        {Subject: pkix.Name{CommonName: "Zoë"}, NotAfter: now.Add(60 * 24 * time.Hour)},
		"zoe-nfd":    {Subject: pkix.Name{CommonName: "Zoë"}, NotAfter: now.Add(60 * 24 * time.Hour)},
		"zoe-short":  {Subject: pkix.Name{CommonName: "Zoë"}, NotAfter: now.Add(10 * 24 * time.Hour)},
		"bot":        {Subject: pkix.Name{CommonName: "bot"}, DNSNames: []string{"Bot.Example.com"}},
		"corp":       {Subject: pkix.Name{CommonName: "carol", Organization: []string{"Example Corp"}}},
		"corp-case":  {Subject: pkix.Name{CommonName: "carol", Organization: []string{"example corp"}}},
		"ci":         {Subject: pkix.Name{CommonName: "ci"}, SerialNumber: bigInt(0x0a1b2c)},
		"simon":      {Subject: pkix.Name{CommonName: "simon"}, EmailAddresses: []string{"Simon@EXAMPLE.com"}},
		"simon-case": {Subject: pkix.Name{CommonName: "simon"}, EmailAddresses: []string{"simon@example.com"}},
	} {
		pe.issue(t, name, tmpl)
	}
	const (
		wiki  = "wiki.example.com"
		api   = "api.example.com"
		other = "other.example.com"
	)
	tests := []policyCase{
		// First match wins: /admin is wiki-admin's, whose rule wants OU Ops.
		{name: "admin by ou", cert: "alice", sni: wiki, path: "/admin", status: 200, upstream: "/wiki-admin/admin"},
		{name: "admin refuses staff", cert: "bob", sni: wiki, path: "/admin", status: 403, reasonText: "client not allowed"},
		{name: "admin subpath", cert: "bob", sni: wiki, path: "/admin/users", status: 403},
		{name: "admin subpath ops", cert: "alice", sni: wiki, path: "/admin/users?x=1", status: 200, upstream: "/wiki-admin/admin/users?x=1"},
		{name: "no prefix tricks", cert: "bob", sni: wiki, path: "/administrator", status: 200, upstream: "/wiki/administrator"},
		{name: "admin trailing slash", cert: "bob", sni: wiki, path: "/admin/", status: 403},
		{name: "path parameter", cert: "bob", sni: wiki, path: "/admin;jsessionid=1/users", status: 403},
		{name: "path parameter ops", cert: "alice", sni: wiki, path: "/admin;v=1", status: 200, upstream: "/wiki-admin/admin;v=1"},
		{name: "encoded semicolon", cert: "bob", sni: wiki, path: "/admin%3Bx", status: 200, upstream: "/wiki/admin%3Bx"},
		{name: "path case", cert: "bob", sni: wiki, path: "/Admin", status: 200, upstream: "/wiki/Admin"},
		{name: "ou case", cert: "eve", sni: wiki, path: "/admin", status: 403},
		{name: "staff by email domain", cert: "bob", sni: wiki, path: "/", status: 200, upstream: "/wiki/"},
		{name: "email domain case", cert: "alice", sni: wiki, path: "/page", status: 200, upstream: "/wiki/page"},
		{name: "other email domain", cert: "eve", sni: wiki, path: "/", status: 403},
		{name: "email domain suffix", cert: "mallory", sni: wiki, path: "/", status: 403},
		// Hosts: case, trailing dot, port.
		{name: "host upper case", cert: "bob", sni: wiki, host: "WIKI.Example.COM", path: "/admin", status: 403},
		{name: "host trailing dot", cert: "bob", sni: wiki, host: "wiki.example.com.", path: "/admin", status: 403},
		{name: "host with port", cert: "bob", sni: wiki, host: "wiki.example.com:8443", path: "/admin", status: 403},
		{name: "host all three", cert: "alice", sni: wiki, host: "Wiki.Example.Com.:443", path: "/admin", status: 200, upstream: "/wiki-admin/admin"},
		// Paths are matched as the upstream gets them.
		{name: "dot dot", cert: "bob", sni: wiki, path: "/x/../admin", status: 403},
		{name: "dot dot above root", cert: "bob", sni: wiki, path: "/../../admin", status: 403},
		{name: "encoded letter", cert: "bob", sni: wiki, path: "/%61dmin", status: 403},
		{name: "encoded dots", cert: "bob", sni: wiki, path: "/x/%2e%2E/admin", status: 403},
		{name: "double slash", cert: "bob", sni: wiki, path: "//admin", status: 403},
		{name: "dot segment", cert: "bob", sni: wiki, path: "/./admin", status: 403},
		{name: "cleaned upstream path", cert: "alice", sni: wiki, path: "/a/./b//c/../%7Ed", status: 200, upstream: "/wiki/a/b/~d"},
		{name: "out of admin", cert: "bob", sni: wiki, path: "/admin/../pub", status: 200, upstream: "/wiki/pub"},
		{name: "reserved escape kept", cert: "bob", sni: wiki, path: "/a%3bb%20c", status: 200, upstream: "/wiki/a%3Bb%20c"},
		{name: "encoded slash", cert: "alice", sni: wiki, path: "/admin%2Fx", status: 400, reasonText: "bad request path"},
		{name: "encoded backslash", cert: "alice", sni: wiki, path: "/admin%5cx", status: 400},
		{name: "encoded nul", cert: "alice", sni: wiki, path: "/a%00", status: 400},
		// Wildcards: one label; URI SANs with a final /*.
		{name: "wildcard", cert: "svc", sni: "web.apps.example.com", path: "/", status: 200, upstream: "/apps/"},
		{name: "wildcard two labels", cert: "svc", sni: "", host: "a.web.apps.example.com", path: "/pub", status: 403},
		{name: "wildcard bare domain", cert: "svc", sni: "", host: "apps.example.com", path: "/", status: 404, reasonText: "no route"},
		{name: "spiffe other namespace", cert: "svc-dev", sni: "web.apps.example.com", path: "/", status: 403},
		{name: "spiffe prefix trick", cert: "svc-trick", sni: "web.apps.example.com", path: "/", status: 403},
		{name: "spiffe dot segment", cert: "svc-dots", sni: "web.apps.example.com", path: "/", status: 403},
		{name: "spiffe nothing after", cert: "svc-bare", sni: "web.apps.example.com", path: "/", status: 403},
		// CNs as UTF-8 bytes, days left, O, DNS SAN.
		{name: "unicode cn", cert: "zoe", sni: api, path: "/v1/items", status: 200, upstream: "/api-v1/v1/items"},
		{name: "unicode cn other form", cert: "zoe-nfd", sni: api, path: "/v1/items", status: 403},
		{name: "days left", cert: "zoe-short", sni: api, path: "/v1", status: 403, reasonText: "too-few-days-left"},
		{name: "segment boundary", cert: "corp", sni: api, path: "/v10", status: 200, upstream: "/api/v10"},
		{name: "first route decides", cert: "corp", sni: api, path: "/v1", status: 403},
		{name: "organization", cert: "corp", sni: api, path: "/", status: 200, upstream: "/api/"},
		{name: "organization case", cert: "corp-case", sni: api, path: "/", status: 403},
		{name: "dns san case", cert: "bot", sni: api, path: "/status", status: 200, upstream: "/api/status"},
		// Serial, issuer by subject and by fingerprint.
		{name: "serial", cert: "ci", sni: "ci.example.com", path: "/", status: 200, upstream: "/ci/"},
		{name: "other serial", cert: "bob", sni: "ci.example.com", path: "/", status: 403},
		{name: "issuer", cert: "bob", sni: "ca.example.com", path: "/", status: 200, upstream: "/ca/"},
		{name: "issuer fingerprint", cert: "bob", sni: "ca2.example.com", path: "/", status: 200, upstream: "/ca2/"},
		// Catch-alls: refusing and unix-socket routes, no route.
		{name: "refusing route", cert: "simon", sni: other, path: "/private/x", status: 403, reasonText: "client not allowed"},
		{name: "earlier route before refusing one", cert: "bob", sni: wiki, path: "/private", status: 200, upstream: "/wiki/private"},
		{name: "unix socket", cert: "simon", sni: other, path: "/pub/x", status: 200, upstream: "/pub/x"},
		{name: "email local part case", cert: "simon-case", sni: other, path: "/pub", status: 403},
		{name: "no route", cert: "simon", sni: other, path: "/", status: 404, reasonText: "no route"},
		// Host against SNI: another route is misdirected; the same route is not.
		{name: "host of another route", cert: "bob", sni: wiki, host: api, path: "/", status: 421, reasonText: "misdirected"},
		{name: "host of no route", cert: "bob", sni: wiki, host: "127.0.0.1", path: "/", status: 404},
		{name: "sni of another route", cert: "simon", sni: other, host: wiki, path: "/pub", status: 421},
		{name: "same wildcard route", cert: "svc", sni: "a.apps.example.com", host: "b.apps.example.com", path: "/", status: 200, upstream: "/apps/"},
		{name: "same path route", cert: "simon", sni: other, host: "unknown.test", path: "/pub", status: 200, upstream: "/pub"},
		{name: "no sni routes by host", cert: "bob", sni: "", host: wiki, path: "/", status: 200, upstream: "/wiki/"},
	}
	if len(tests) < 40 {
		t.Fatalf("%d cases; the issue wants at least 40", len(tests))
	}
	eachProtocol(t, "", func(t *testing.T, h2 bool) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) { pe.check(t, tt, h2) })
		}
	})
	// The reasons are logged and counted.
	pe.waitLog("request ", "reason="+ReasonMisdirected)
	var b strings.Builder
	pe.p.writeMetrics(&b)
	m := b.String()
	for _, r := range []string{ReasonNotAllowed, ReasonDaysLeft, ReasonNoRoute, ReasonBadPath, ReasonMisdirected} {
		if !strings.Contains(m, fmt.Sprintf("reason=%q", r)) {
			t.Errorf("metrics lack reason %q:\n%s", r, m)
		}
	}
}

// policyCase is one request through the proxy of a policyEnv and what
// comes of it.
type policyCase struct {
	name       string
	cert       string
	sni, host  string // sni "" sends none; host "" is sni
	path       string
	status     int
	upstream   string // what the upstream got, for a 200
	reasonText string // in the body of a refusal
}

// check sends the request of tt (over HTTP/2 with h2) and checks the
// status, the request URI the upstream got, and that a refused request
// reaches no upstream.
func (pe *policyEnv) check(t *testing.T, tt policyCase, h2 bool) {
	t.Helper()
	c := pe.clientFor(t, tt.cert, tt.sni, h2)
	// Go's client sends the path as written: no cleaning.
	req, err := http.NewRequest("GET", "https://"+pe.addr+tt.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := req.URL.EscapedPath(), strings.Split(tt.path, "?")[0]; got != want {
		t.Fatalf("the client would send %q, not %q", got, want)
	}
	req.Host = tt.host
	if req.Host == "" {
		req.Host = tt.sni
	}
	before := pe.hits.Load()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", tt.path, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != tt.status {
		t.Fatalf("status = %d %q; want %d", resp.StatusCode, body, tt.status)
	}
	if want := "HTTP/1.1"; h2 {
		want = "HTTP/2.0"
		if resp.Proto != want {
			t.Fatalf("proto = %s; want %s", resp.Proto, want)
		}
	} else if resp.Proto != want {
		t.Fatalf("proto = %s; want %s", resp.Proto, want)
	}
	if tt.status != 200 {
		if pe.hits.Load() != before {
			t.Errorf("a refused request reached an upstream")
		}
		if !strings.Contains(string(body), tt.reasonText) {
			t.Errorf("body = %q; want %q in it", body, tt.reasonText)
		}
		return
	}
	if got := strings.TrimPrefix(string(body), "up:"); got != tt.upstream {
		t.Errorf("upstream got %q; want %q", got, tt.upstream)
	}
}

// TestPolicyPathParameters (issue 29): a path parameter (";...") never
// takes a request out of the route a servlet container's reading of its
// path would take, over HTTP/1.1 and HTTP/2: on a dot segment, or on an
// empty one before the end, it is refused (400 bad-path) before any route;
// on another segment it stays, and the route is the bare segment's; the
// upstream gets the path that was routed.
func TestPolicyPathParameters(t *testing.T) {
	pe := newPolicyEnv(t)
	for name, tmpl := range map[string]*x509.Certificate{
		"alice": {Subject: pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"Ops"}}, EmailAddresses: []string{"alice@example.com"}},
		"bob":   {Subject: pkix.Name{CommonName: "bob"}, EmailAddresses: []string{"bob@example.com"}},
		"simon": {Subject: pkix.Name{CommonName: "simon"}, EmailAddresses: []string{"Simon@example.com"}},
		"svc":   {Subject: pkix.Name{CommonName: "web"}, URIs: []*url.URL{{Scheme: "spiffe", Host: "example.com", Path: "/ns/prod/sa/web"}}},
	} {
		pe.issue(t, name, tmpl)
	}
	const (
		wiki  = "wiki.example.com"
		other = "other.example.com"
		bad   = "bad request path"
	)
	// wiki's upstream is plain http, which HTTP/1.1 requests reach the
	// direct way; the apps' is https, through ReverseProxy.
	tests := []policyCase{
		{name: "dot dot parameter", cert: "bob", sni: wiki, path: "/x/..;/admin", status: 400, reasonText: bad},
		{name: "encoded dot dot parameter", cert: "bob", sni: wiki, path: "/x/%2e%2e;/admin", status: 400, reasonText: bad},
		{name: "upper encoded dot dot parameter", cert: "bob", sni: wiki, path: "/x/%2E%2E;/admin/users", status: 400, reasonText: bad},
		{name: "half encoded dot dot parameter", cert: "bob", sni: wiki, path: "/x/.%2e;/admin", status: 400, reasonText: bad},
		{name: "dot parameter", cert: "bob", sni: wiki, path: "/.;/admin", status: 400, reasonText: bad},
		{name: "encoded dot parameter", cert: "bob", sni: wiki, path: "/%2e;/admin", status: 400, reasonText: bad},
		{name: "empty parameter", cert: "bob", sni: wiki, path: "/;/admin", status: 400, reasonText: bad},
		{name: "jsessionid on dot dot", cert: "bob", sni: wiki, path: "/x/..;jsessionid=1/admin", status: 400, reasonText: bad},
		{name: "encoded jsessionid on dot dot", cert: "bob", sni: wiki, path: "/x/%2e%2e;jsessionid=1/admin", status: 400, reasonText: bad},
		{name: "dot dot parameter last", cert: "alice", sni: wiki, path: "/admin/..;", status: 400, reasonText: bad},
		{name: "out of a refusing route", cert: "simon", sni: other, path: "/pub/..;/private/x", status: 400, reasonText: bad},
		{name: "empty parameter to a refusing route", cert: "simon", sni: other, path: "/;/private", status: 400, reasonText: bad},
		// On an ordinary segment: the bare segment's route, the path as it came.
		{name: "parameter on admin", cert: "bob", sni: wiki, path: "/admin;x", status: 403, reasonText: "client not allowed"},
		{name: "encoded letter and parameter", cert: "bob", sni: wiki, path: "/%61dmin;x/users", status: 403},
		{name: "parameter on admin ops", cert: "alice", sni: wiki, path: "/%61dmin;jsessionid=1/users", status: 200, upstream: "/wiki-admin/admin;jsessionid=1/users"},
		{name: "parameter on a refusing route", cert: "simon", sni: other, path: "/private;x/y", status: 403, reasonText: "client not allowed"},
		{name: "parameter resolved away", cert: "bob", sni: wiki, path: "/x;a/../admin", status: 403},
		{name: "trailing jsessionid", cert: "bob", sni: wiki, path: "/page/;jsessionid=1", status: 200, upstream: "/wiki/page/;jsessionid=1"},
		{name: "root jsessionid", cert: "bob", sni: wiki, path: "/;jsessionid=1?a=b", status: 200, upstream: "/wiki/;jsessionid=1?a=b"},
		{name: "parameters through ReverseProxy", cert: "svc", sni: "web.apps.example.com", path: "/a;v=1/%62/;jsessionid=1", status: 200, upstream: "/apps/a;v=1/b/;jsessionid=1"},
		{name: "dot dot parameter through ReverseProxy", cert: "svc", sni: "web.apps.example.com", path: "/a/..;/b", status: 400, reasonText: bad},
		// An encoded ';' is data: the segment "..;" is a name.
		{name: "encoded semicolon on dot dot", cert: "bob", sni: wiki, path: "/x/..%3B/admin", status: 200, upstream: "/wiki/x/..%3B/admin"},
		{name: "lower encoded semicolon on dot dot", cert: "bob", sni: wiki, path: "/x/..%3b/admin", status: 200, upstream: "/wiki/x/..%3B/admin"},
		{name: "upper case path", cert: "bob", sni: wiki, path: "/ADMIN", status: 200, upstream: "/wiki/ADMIN"},
	}
	eachProtocol(t, "", func(t *testing.T, h2 bool) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) { pe.check(t, tt, h2) })
		}
	})
	pe.waitLog("request ", "cn=bob", "status=400", "reason="+ReasonBadPath)
}

// h2Request sends one HTTP/2 GET by hand on a new connection with the TLS
// server name sni, with both an :authority and a Host header (Go's client
// sends only :authority), and returns once the proxy logged it. Each field
// is an HPACK literal without indexing, with a new name, no Huffman.
func (pe *policyEnv) h2Request(t *testing.T, cert, sni, authority, host, path string) string {
	t.Helper()
	leaf := pe.certs[cert]
	cfg := pe.tlsConfig(leaf.Leaf, leaf.PrivateKey.(crypto.Signer))
	cfg.ServerName, cfg.NextProtos = sni, []string{"h2"}
	c, err := tls.Dial("tcp", pe.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var block []byte
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":path", path}, {":authority", authority}, {"host", host}} {
		block = append(block, 0, byte(len(f[0])))
		block = append(block, f[0]...)
		block = append(block, byte(len(f[1])))
		block = append(block, f[1]...)
	}
	frame := func(typ, flags byte, stream uint32, payload []byte) []byte {
		n := len(payload)
		h := []byte{byte(n >> 16), byte(n >> 8), byte(n), typ, flags, byte(stream >> 24), byte(stream >> 16), byte(stream >> 8), byte(stream)}
		return append(h, payload...)
	}
	msg := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	msg = append(msg, frame(0x4, 0, 0, nil)...)         // SETTINGS
	msg = append(msg, frame(0x1, 0x1|0x4, 1, block)...) // HEADERS, END_STREAM|END_HEADERS
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	return pe.waitLog("request ", "cn="+leaf.Leaf.Subject.CommonName, "uri="+path, "proto=HTTP/2.0")
}

// TestPolicyAuthorityAndHost: over HTTP/2 the :authority routes, a Host
// header beside it does not, and the upstream gets the :authority; so does
// the host of an HTTP/1.1 absolute-form target.
func TestPolicyAuthorityAndHost(t *testing.T) {
	pe := newPolicyEnv(t)
	pe.issue(t, "bob", &x509.Certificate{Subject: pkix.Name{CommonName: "bob"}, EmailAddresses: []string{"bob@example.com"}})
	// :authority wiki (the SNI's route), Host api: the wiki's route.
	line := pe.h2Request(t, "bob", "wiki.example.com", "wiki.example.com", "api.example.com", "/one")
	if !strings.Contains(line, "status=200") {
		t.Fatalf("log: %s; want status=200", line)
	}
	if got := *pe.host.Load(); got != "wiki.example.com" {
		t.Errorf("upstream Host = %q; want the :authority", got)
	}
	// :authority api, Host wiki (the SNI's): misdirected, whatever Host says.
	before := pe.hits.Load()
	line = pe.h2Request(t, "bob", "wiki.example.com", "api.example.com", "wiki.example.com", "/two")
	if !strings.Contains(line, "status=421") || !strings.Contains(line, "reason="+ReasonMisdirected) {
		t.Fatalf("log: %s; want status=421 reason=%s", line, ReasonMisdirected)
	}
	if pe.hits.Load() != before {
		t.Error("a misdirected request reached an upstream")
	}
	// HTTP/1.1 in absolute form: the URL's host is the request's, not the
	// Host header (RFC 9112 section 3.2.2), for routing as for the upstream.
	for _, tt := range []struct{ target, host, want string }{
		{"https://wiki.example.com/three", "api.example.com", "HTTP/1.1 200 "},
		{"https://api.example.com/four", "wiki.example.com", "HTTP/1.1 421 "},
	} {
		leaf := pe.certs["bob"]
		cfg := pe.tlsConfig(leaf.Leaf, leaf.PrivateKey.(crypto.Signer))
		cfg.ServerName, cfg.NextProtos = "wiki.example.com", []string{"http/1.1"}
		c, err := tls.Dial("tcp", pe.addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", tt.target, tt.host)
		resp, _ := io.ReadAll(c)
		c.Close()
		if !strings.HasPrefix(string(resp), tt.want) {
			t.Errorf("GET %s with Host %s: %.40q; want %q", tt.target, tt.host, resp, tt.want)
		}
	}
	if got := *pe.host.Load(); got != "wiki.example.com" {
		t.Errorf("upstream Host = %q; want the request target's", got)
	}
	// The host routes normalized; the upstream gets it as it came.
	for _, h2 := range []bool{false, true} {
		req, _ := http.NewRequest("GET", "https://"+pe.addr+"/five", nil)
		req.Host = "Wiki.Example.COM.:8443"
		resp, err := pe.clientFor(t, "bob", "wiki.example.com", h2).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := *pe.host.Load(); resp.StatusCode != 200 || got != req.Host {
			t.Errorf("h2 %v: status %d, upstream Host %q; want 200 and %q", h2, resp.StatusCode, got, req.Host)
		}
	}
}
