package policy

import (
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"minica/formats"
	"minica/identity"
	"minica/internal/endpoint"
	"minica/internal/testca"
)

// TestParsePolicyErrors: each error of a bad policy, with the line and
// column of what it is about, marked with § in the JSON (the errors come in
// file order, one per marker).
func TestParsePolicyErrors(t *testing.T) {
	root := testca.New(t, "Test CA")
	const up = `"upstream": "http://127.0.0.1:1"`
	bundle := `(the bundle has "CN=Test CA" sha256 ` + identity.Fingerprint(root.Cert) + `)`
	ab := strings.Repeat("ab", 32)
	tests := []struct {
		name, json string
		want       []string // the messages, without FILE:LINE:COL
	}{
		{"syntax", "{\n  \"routes\": [§,]\n}", []string{`invalid JSON: ',' looking for beginning of value`}},
		{"syntax in route", `{"routes": [{"host": "a",§, }]}`, []string{`invalid JSON: ',' looking for beginning of object key string`}},
		{"truncated", `{"routes": [§`, []string{`invalid JSON: unexpected end of file`}},
		{"trailing data", `{"routes": [{"host": "*", "refuse": true}]} §{}`, []string{`invalid JSON: an object after the end of the policy`}},
		{"not an object", `§[]`, []string{`policy: want an object, got a list`}},
		{"no routes", `§{}`, []string{`policy: no "routes": a policy needs at least one route`}},
		{"empty routes", `{"routes": §[]}`, []string{`routes: empty list: a policy needs at least one route`}},
		{"routes not a list", `{"routes": §{}}`, []string{`routes: want a list of routes, got an object`}},
		{"unknown top field", `§{§"route": []}`, []string{
			`policy: no "routes": a policy needs at least one route`,
			`policy: unknown field "route" (known: rules, routes)`}},
		{"unknown route field", `{"routes": [{"host": "*", "refuse": true, §"hots": "x"}]}`, []string{
			`route 1: unknown field "hots" (known: name, host, path, upstream, upstream_ca, allow, rule, refuse)`}},
		{"duplicate field", `{"routes": [{"host": "*", §"host": "a", "refuse": true}]}`, []string{`route 1: "host" given twice`}},
		{"wrong type", `{"routes": [{"host": §7, "refuse": true}]}`, []string{`route 1: host: want a string, got a number`}},
		{"route not an object", `{"routes": [§"a"]}`, []string{`route 1: want an object, got a string`}},
		{"no host", `{"routes": [§{"refuse": true}]}`, []string{`route 1: no host: give "host": "NAME", "*.DOMAIN" or "*"`}},
		{"no rule", `{"routes": [§{"host": "a.example.com", ` + up + `}]}`, []string{
			`route 1 (host "a.example.com", path "/"): no rule: give "allow", "rule" or "refuse": true (a route without a rule would refuse every client)`}},
		{"two rules", `{"rules": {"r": {"any": true}}, "routes": [§{"host": "a", ` + up + `, "rule": "r", "allow": {"any": true}}]}`, []string{
			`route 1: rule and allow exclude each other`}},
		{"unknown rule", `{"routes": [{"host": "a", ` + up + `, "rule": §"ops"}]}`, []string{`route 1: rule "ops" is not under "rules"`}},
		{"refuse false", `{"routes": [{"host": "a", "refuse": §false}]}`, []string{
			`route 1: refuse: want true or no field; a route lets clients through by "allow" or "rule"`}},
		{"refuse with upstream", `{"routes": [{"host": "a", "refuse": true, "upstream": §"http://127.0.0.1:1"}]}`, []string{`route 1: a route that refuses has no upstream`}},
		{"no upstream", `{"routes": [§{"host": "a", "allow": {"any": true}}]}`, []string{
			`route 1: no upstream: give "upstream": http://HOST:PORT, https://HOST:PORT or unix:/PATH`}},
		{"bad upstream", `{"routes": [{"host": "a", "upstream": §"ftp://x", "allow": {"any": true}}]}`, []string{
			`route 1: upstream "ftp://x": want http://HOST:PORT, https://HOST:PORT or unix:/PATH`}},
		{"upstream_ca on http", `{"routes": [{"host": "a", ` + up + `, "upstream_ca": §"ca.pem", "allow": {"any": true}}]}`, []string{
			`route 1: upstream_ca is only for an https upstream`}},
		{"host port", `{"routes": [{"host": §"a.example.com:443", "refuse": true}]}`, []string{
			`route 1: host "a.example.com:443": no port: routes match the host whatever the port`}},
		{"host two wildcards", `{"routes": [{"host": §"*.*.example.com", "refuse": true}]}`, []string{
			`route 1: host "*.*.example.com": '*' only as the whole first label, as in *.example.com`}},
		{"host partial wildcard", `{"routes": [{"host": §"w*.example.com", "refuse": true}]}`, []string{
			`route 1: host "w*.example.com": '*' only as the whole first label, as in *.example.com`}},
		{"host unicode", `{"routes": [{"name": "büch", "host": §"bücher.example", "refuse": true}]}`, []string{
			`route 1: host "bücher.example": ASCII only: write an internationalized name in its xn-- form`}},
		{"host empty label", `{"routes": [{"host": §"a..example", "refuse": true}]}`, []string{
			`route 1: host "a..example": empty or over-long label`}},
		{"path relative", `{"routes": [{"host": "a", "path": §"admin", "refuse": true}]}`, []string{
			`route 1: path "admin": want an absolute path such as /admin`}},
		{"path trailing slash", `{"routes": [{"host": "a", "path": §"/admin/", "refuse": true}]}`, []string{
			`route 1: path "/admin/": no trailing '/': "/admin" matches /admin and everything under it`}},
		{"path unclean", `{"routes": [{"host": "a", "path": §"/a/../b", "refuse": true}]}`, []string{
			`route 1: path "/a/../b": not a clean path: requests are matched as "/b"`}},
		{"path encoded unreserved", `{"routes": [{"host": "a", "path": §"/%61", "refuse": true}]}`, []string{
			`route 1: path "/%61": not a clean path: requests are matched as "/a"`}},
		{"path encoded slash", `{"routes": [{"host": "a", "path": §"/a%2Fb", "refuse": true}]}`, []string{
			`route 1: path "/a%2Fb": an encoded '/' (%2F) in the path`}},
		{"path query", `{"routes": [{"host": "a", "path": §"/a?b", "refuse": true}]}`, []string{
			`route 1: path "/a?b": a path prefix has no query, fragment or ';'`}},
		{"same route twice", "{\"routes\": [{\"host\": \"A.example\", \"refuse\": true},\n §{\"host\": \"a.example.\", \"refuse\": true}]}", []string{
			`route 2: same host "a.example" and path "/" as route 1, which always matches first`}},
		{"empty rule", `{"routes": [{"host": "a", ` + up + `, §"allow": {}}]}`, []string{
			`route 1: allow: no clause: give at least one of any, cn, email, email_domain, o, ou, dns, uri, serial, issuer, issuer_sha256, min_days_left ("any": true lets every verified client through)`}},
		{"empty list", `{"routes": [{"host": "a", ` + up + `, §"allow": {"cn": §[]}}]}`, []string{
			`route 1: allow: no clause: give at least one of any, cn, email, email_domain, o, ou, dns, uri, serial, issuer, issuer_sha256, min_days_left ("any": true lets every verified client through)`,
			`route 1: allow: cn: empty list (leave the field out instead)`}},
		{"any with clauses", `{"routes": [{"host": "a", ` + up + `, §"allow": {"any": true, "cn": ["x"]}}]}`, []string{
			`route 1: allow: "any": true and identity clauses exclude each other`}},
		{"any false", `{"routes": [{"host": "a", ` + up + `, "allow": {"any": §false}}]}`, []string{`route 1: allow: any: want true or no field`}},
		{"bad clause values", `{"routes": [{"host": "a", ` + up + `, "allow": {
  "cn": [§""], "email": [§"simon"], "email_domain": [§"@x"], "serial": [§"xyz"], "issuer_sha256": [§"00"],
  "uri": [§"spiffe://example.com/ns/*/x", §"spiffe://*"], "min_days_left": §1.5, "ou": ["a", §7], "o": §"x"}}]}`, []string{
			`route 1: allow: cn "": empty value`,
			`route 1: allow: email "simon": want LOCAL@DOMAIN`,
			`route 1: allow: email_domain "@x": want a domain name such as example.com`,
			`route 1: allow: serial "xyz": want a serial in hex, such as 5F3C09`,
			`route 1: allow: issuer_sha256 "00": want the SHA-256 of the CA certificate, 64 hex digits`,
			`route 1: allow: uri "spiffe://example.com/ns/*/x": '*' only as the whole last path segment after SCHEME://AUTHORITY/, as in spiffe://example.com/ns/prod/*`,
			`route 1: allow: uri "spiffe://*": '*' only as the whole last path segment after SCHEME://AUTHORITY/, as in spiffe://example.com/ns/prod/*`,
			`route 1: allow: min_days_left: want a whole number from 0 to 36500, got 1.5`,
			`route 1: allow: ou: want a list of strings, got a number in it`,
			`route 1: allow: o: want a list of strings, got a string`}},
		{"unknown CA", `{"routes": [{"host": "a", ` + up + `, "allow": {"issuer": [§"CN=Other CA"], "issuer_sha256": [§"` + ab + `"]}}]}`, []string{
			`route 1: allow: issuer "CN=Other CA": no CA of the bundle ` + bundle,
			`route 1: allow: issuer_sha256 "` + ab + `": no CA of the bundle ` + bundle}},
		{"bad rule name", `{"rules": {§"a b": {"any": true}}, "routes": [{"host": "a", "refuse": true}]}`, []string{
			`rules: name "a b": want letters, digits, '-', '_' or '.'`}},
		{"unknown rule field", // an unknown field of a named rule
			`{"rules": {"ops": {"ou": ["Ops"], §"emial": ["x"]}}, "routes": [{"host": "a", "refuse": true}]}`, []string{
				`rules.ops: unknown field "emial" (known: any, cn, email, email_domain, o, ou, dns, uri, serial, issuer, issuer_sha256, min_days_left)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The markers' positions, as LINE:COL, and the JSON without them.
			var want []string
			var clean strings.Builder
			line, col := 1, 1
			for _, c := range tt.json {
				switch {
				case c == '§':
					want = append(want, fmt.Sprintf("p.json:%d:%d: %s", line, col, tt.want[len(want)]))
					continue
				case c == '\n':
					line, col = line+1, 1
				default:
					col++
				}
				clean.WriteRune(c)
			}
			if len(want) != len(tt.want) {
				t.Fatalf("%d markers for %d errors", len(want), len(tt.want))
			}
			_, err := Parse("p.json", []byte(clean.String()), Options{ParseCerts: formats.ParseCertificates, CAs: []*x509.Certificate{root.Cert}})
			var pe Errors
			if !errors.As(err, &pe) {
				t.Fatalf("Parse() error = %v; want Errors", err)
			}
			var got []string
			for _, e := range pe {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestParsePolicyUpstreamCA(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.json")
	data := []byte(`{"routes": [{"host": "a", "upstream": "https://127.0.0.1:1", "upstream_ca": "up.pem", "allow": {"any": true}}]}`)
	_, err := Parse(file, data, Options{ParseCerts: formats.ParseCertificates})
	if want := `reading upstream CA "` + filepath.Join(dir, "up.pem") + `": open `; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Parse() error = %v; want %q...", err, want)
	}
	ca := testca.New(t, "Upstream CA")
	os.WriteFile(filepath.Join(dir, "up.pem"), ca.PEM(), 0o644)
	pol, err := Parse(file, data, Options{ParseCerts: formats.ParseCertificates})
	if err != nil {
		t.Fatal(err)
	}
	if pol.Routes[0].UpstreamRootCAs == nil {
		t.Error("no upstream pool")
	}
}

func TestCleanPath(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{in: "", want: "/"},
		{in: "/", want: "/"},
		{in: "/a/b", want: "/a/b"},
		{in: "/a/b/", want: "/a/b/"},
		{in: "/a//b", want: "/a/b"},
		{in: "//a", want: "/a"},
		{in: "/a/./b", want: "/a/b"},
		{in: "/a/.", want: "/a/"},
		{in: "/a/..", want: "/"},
		{in: "/a/b/..", want: "/a/"},
		{in: "/..", want: "/"},
		{in: "/../../a", want: "/a"},
		{in: "/a/.b/..c", want: "/a/.b/..c"},
		{in: "/%41%7e%2D%2e%5F", want: "/A~-._"},
		{in: "/%2e%2e/a", want: "/a"},
		{in: "/a%2fb", err: `an encoded '/' (%2F) in the path`},
		{in: "/a%5Cb", err: `an encoded '\\' (%5C) in the path`},
		{in: "/a\\b", err: `a '\' in the path`},
		{in: "/a%00", err: "an encoded control character (%00) in the path"},
		{in: "/a%7f", err: "an encoded control character (%7F) in the path"},
		{in: "/a%", err: "'%' not followed by two hex digits"},
		{in: "/a%zz", err: "'%' not followed by two hex digits"},
		{in: "/a%3b%3D%40", want: "/a%3B%3D%40"},
		{in: "/caf%c3%a9", want: "/caf%C3%A9"},
		{in: "/café", want: "/caf%C3%A9"},
		{in: "/a b", want: "/a%20b"},
		{in: "/a;b=c:@!$&'()*+,", want: "/a;b=c:@!$&'()*+,"},
		{in: "*", err: "the path is not absolute"},
		// Path parameters (issue 29): a servlet container strips ";..." from
		// each segment before it resolves dots, so a parameter on a dot
		// segment or on an empty one before the end is refused; on another
		// segment it stays (routes match the bare segment).
		{in: "/x/..;/admin", err: `a path parameter on the dot segment "..;"`},
		{in: "/x/%2e%2e;/admin", err: `a path parameter on the dot segment "..;"`},
		{in: "/x/.%2E;/admin", err: `a path parameter on the dot segment "..;"`},
		{in: "/x/%2E%2e;jsessionid=1/admin", err: `a path parameter on the dot segment "..;jsessionid=1"`},
		{in: "/x/..;jsessionid=1/admin", err: `a path parameter on the dot segment "..;jsessionid=1"`},
		{in: "/.;/admin", err: `a path parameter on the dot segment ".;"`},
		{in: "/%2e;x/admin", err: `a path parameter on the dot segment ".;x"`},
		{in: "/x/..;", err: `a path parameter on the dot segment "..;"`},
		{in: "/x/.;", err: `a path parameter on the dot segment ".;"`},
		{in: "/admin/..;a=b;c", err: `a path parameter on the dot segment "..;a=b;c"`},
		{in: "/;/admin", err: `a path parameter on an empty segment (";") before the end of the path`},
		{in: "/x/;a/admin", err: `a path parameter on an empty segment (";a") before the end of the path`},
		{in: "//;/admin", err: `a path parameter on an empty segment (";") before the end of the path`},
		{in: "/x/;/", err: `a path parameter on an empty segment (";") before the end of the path`},
		{in: "/x/..%3B/admin", want: "/x/..%3B/admin"}, // an encoded ';' is data, not a parameter
		{in: "/x/..%3b;/admin", want: "/x/..%3B;/admin"},
		{in: "/admin;x", want: "/admin;x"},
		{in: "/admin;x/users", want: "/admin;x/users"},
		{in: "/a..;b/c", want: "/a..;b/c"},
		{in: "/x;a/../admin", want: "/admin"},
		{in: "/x/;jsessionid=1", want: "/x/;jsessionid=1"}, // Tomcat's encodeURL of /x/
		{in: "/;jsessionid=1", want: "/;jsessionid=1"},
		{in: "/x/.;a/..", err: `a path parameter on the dot segment ".;a"`},
	}
	for _, tt := range tests {
		got, err := cleanPath(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("cleanPath(%q) error = %v; want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("cleanPath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
		if again, _ := cleanPath(got); again != got {
			t.Errorf("cleanPath(%q) = %q; not stable", got, again)
		}
	}
}

func TestNormHost(t *testing.T) {
	for in, want := range map[string]string{
		"Wiki.Example.COM": "wiki.example.com", "wiki.example.com.": "wiki.example.com", "wiki.example.com:8443": "wiki.example.com",
		"WIKI.example.com.:443": "wiki.example.com", "[::1]:443": "[::1]", "[::1]": "[::1]", "127.0.0.1:80": "127.0.0.1", "": "",
		"ÄB.example": "Äb.example", // ASCII letters only
	} {
		if got := normHost(in); got != want {
			t.Errorf("normHost(%q) = %q; want %q", in, got, want)
		}
	}
}

// TestPolicyDecideAllocs: the decision for a clean path and lowercase names
// allocates nothing.
func TestPolicyDecideAllocs(t *testing.T) {
	pol, err := Parse("p.json", []byte(`{"routes": [
	  {"host": "a.example.com", "path": "/x", "upstream": "http://127.0.0.1:1", "allow": {"email_domain": ["example.com"], "min_days_left": 1}},
	  {"host": "*.example.com", "upstream": "http://127.0.0.1:1", "allow": {"cn": ["alice"]}}]}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := &identity.Identity{CN: "alice", Email: "a@example.com", Emails: []string{"a@example.com"}, NotAfter: time.Now().Add(48 * time.Hour)}
	in := Request{Host: "a.example.com:443", SNI: "a.example.com", Path: "/x/y"} // lowercase: an upper-case host or email domain costs one copy
	now := time.Now()
	if d := pol.Decide(in, id, now); d.Reason != "" || d.Route.Index != 1 {
		t.Fatalf("Decide() = %+v", d)
	}
	if n := testing.AllocsPerRun(100, func() { pol.Decide(in, id, now) }); n != 0 {
		t.Errorf("Decide() allocates %v times; want 0", n)
	}
}

// TestDocPolicyExample: the example of docs/proxy.md, "Routes and policy",
// compiles, and routes as the text around it says.
func TestDocPolicyExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/proxy.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## Routes and policy\n")
	_, block, _ := strings.Cut(section, "```json\n")
	block, _, _ = strings.Cut(block, "```")
	upstreamCA := testca.New(t, "Apps CA").PEM()
	pol, err := Parse("front.json", []byte(block), Options{ReadFile: func(name string) ([]byte, error) {
		if name != "apps-ca.pem" {
			return nil, os.ErrNotExist
		}
		return upstreamCA, nil
	}})
	if err != nil {
		t.Fatalf("the example of docs/proxy.md: %v", err)
	}
	simon := &identity.Identity{CN: "simon", OU: []string{"Ops"}, NotAfter: time.Now().Add(30 * 24 * time.Hour)}
	for _, tt := range []struct{ host, path, route, reason string }{
		{"wiki.example.com", "/admin/users", "wiki-admin", ""},
		{"wiki.example.com", "/administrator", "wiki", ReasonNotAllowed},
		{"web.apps.example.com", "/", "apps", ReasonNotAllowed},
		{"any.example.com", "/private/x", "closed", ReasonNotAllowed},
	} {
		d := pol.Decide(Request{Host: tt.host, Path: tt.path}, simon, time.Now())
		if d.Route == nil || d.Route.Name != tt.route || d.Reason != tt.reason {
			t.Errorf("%s%s: %+v; want route %s, reason %q", tt.host, tt.path, d, tt.route, tt.reason)
		}
	}
}

// TestLookupIsFirstMatch: the indexed lookup of the bare path (without its
// path parameters) picks what a scan of the routes in file order picks, by
// the documented rules, for random policies and requests.
func TestLookupIsFirstMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	hosts := []string{"*", "a.example", "b.example", "*.example", "x.a.example", "*.a.example", "example"}
	paths := []string{"/", "/a", "/a/b", "/ab", "/a/b/c", "/b", "/c"}
	reqHosts := []string{"a.example", "b.example", "c.example", "x.a.example", "y.x.a.example", "example", "other"}
	reqPaths := []string{"/", "/a", "/a/", "/a/b", "/ab", "/a/bc", "/a/b/c/d", "/b/a", "/a;v=1", "/a;v/b", "/a;v/b;w/c", "/a/;v", "/c"}
	params := regexp.MustCompile(`;[^/]*`)
	hostMatches := func(pattern, host string) bool {
		if pattern == "*" || pattern == host {
			return true
		}
		parent, ok := strings.CutPrefix(pattern, "*.")
		dot := strings.IndexByte(host, '.')
		return ok && dot > 0 && host[dot+1:] == parent
	}
	pathMatches := func(prefix, path string) bool {
		if prefix == "/" {
			return true
		}
		rest, ok := strings.CutPrefix(params.ReplaceAllString(path, ""), prefix)
		return ok && (rest == "" || rest[0] == '/')
	}
	for range 300 {
		pol := &Policy{}
		seen := map[[2]string]bool{}
		for range 1 + rng.IntN(12) {
			k := [2]string{hosts[rng.IntN(len(hosts))], paths[rng.IntN(len(paths))]}
			if seen[k] {
				continue
			}
			seen[k] = true
			pol.Routes = append(pol.Routes, &Route{Index: len(pol.Routes) + 1, Host: k[0], Path: k[1]})
		}
		pol.index()
		for _, h := range reqHosts {
			for _, p := range reqPaths {
				want := -1
				for i, rt := range pol.Routes {
					if hostMatches(rt.Host, h) && pathMatches(rt.Path, p) {
						want = i
						break
					}
				}
				if got := pol.lookup(h, barePath(p)); got != want {
					t.Fatalf("lookup(%q, %q) = %d; want %d, the first match of %v", h, p, got, want, routesText(pol))
				}
			}
		}
	}
}

func routesText(p *Policy) string {
	var b strings.Builder
	for _, rt := range p.Routes {
		fmt.Fprintf(&b, " %s%s", rt.Host, rt.Path)
	}
	return b.String()
}

func TestAllowList(t *testing.T) {
	id := &identity.Identity{CN: "alice", Email: "a@x", Emails: []string{"a@x", "b@x"}, OU: []string{"Ops", "Dev"}, URIs: []string{"spiffe://x/a"}}
	tests := []struct {
		name  string
		allow Allow
		want  bool
	}{
		{"empty", Allow{}, true},
		{"cn", Allow{CN: []string{"bob", "alice"}}, true},
		{"cn other", Allow{CN: []string{"bob"}}, false},
		{"cn case", Allow{CN: []string{"Alice"}}, false},
		{"second email", Allow{Email: []string{"b@x"}}, true},
		{"ou", Allow{OU: []string{"Dev"}}, true},
		{"uri", Allow{URI: []string{"spiffe://x/a"}}, true},
		{"uri prefix", Allow{URI: []string{"spiffe://x/"}}, false},
		{"any list", Allow{CN: []string{"bob"}, OU: []string{"Ops"}}, true},
	}
	for _, tt := range tests {
		if _, _, got := OneRoute("", endpoint.Upstream{}, nil, tt.allow).Routes[0].Rule.match(id); got != tt.want {
			t.Errorf("%s: allows = %v; want %v", tt.name, got, tt.want)
		}
	}
}
