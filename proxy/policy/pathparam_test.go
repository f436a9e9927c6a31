package policy

import (
	"strings"
	"testing"
	"time"

	"minica/identity"
)

// servletPolicy protects /admin (cn admin only), /a/b and /private (refuse
// every client) under a broad route and a /x route that let everyone in.
const servletPolicy = `{"routes": [
  {"name": "admin", "host": "*", "path": "/admin", "upstream": "http://127.0.0.1:1", "allow": {"cn": ["admin"]}},
  {"name": "ab", "host": "*", "path": "/a/b", "refuse": true},
  {"name": "private", "host": "*", "path": "/private", "refuse": true},
  {"name": "a", "host": "*", "path": "/a", "upstream": "http://127.0.0.1:1", "allow": {"any": true}},
  {"name": "x", "host": "*", "path": "/x", "upstream": "http://127.0.0.1:1", "allow": {"any": true}},
  {"name": "broad", "host": "*", "upstream": "http://127.0.0.1:1", "allow": {"any": true}}
]}`

// servletView is what a servlet container (Tomcat's CoyoteAdapter) makes
// of the path p of a request, written here from its documented steps and
// independent of cleanPath: every ";..." up to the next '/' removed (path
// parameters), then the escapes decoded, then "//" collapsed and "." and
// ".." resolved (a trailing "." or ".." as if followed by '/'). ok is false
// where Tomcat answers 400: an encoded '/' or '\', a bad escape, a ".."
// above the root. The result is percent-encoded again (every byte but
// unreserved ones and '/'), as routes compare it.
func servletView(p string) (view string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == ';' {
			for i+1 < len(p) && p[i+1] != '/' {
				i++
			}
			continue
		}
		b.WriteByte(p[i])
	}
	raw := b.String()
	var dec []byte
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '%' {
			if i+2 >= len(raw) {
				return "", false
			}
			hi, ok1 := unhex(raw[i+1])
			lo, ok2 := unhex(raw[i+2])
			if !ok1 || !ok2 || hi<<4|lo == '/' || hi<<4|lo == '\\' {
				return "", false
			}
			c = hi<<4 | lo
			i += 2
		}
		dec = append(dec, c)
	}
	path := string(dec)
	if strings.HasSuffix(path, "/.") || strings.HasSuffix(path, "/..") {
		path += "/"
	}
	var out []string
	segs := strings.Split(path, "/")
	for i, s := range segs[1:] {
		switch s {
		case "", ".":
			if i == len(segs)-2 {
				out = append(out, "")
			}
		case "..":
			if len(out) == 0 {
				return "", false
			}
			out = out[:len(out)-1]
		default:
			out = append(out, s)
		}
	}
	var e strings.Builder
	e.WriteByte('/')
	for i, s := range out {
		if i > 0 {
			e.WriteByte('/')
		}
		for j := 0; j < len(s); j++ {
			if c := s[j]; unreserved(c) {
				e.WriteByte(c)
			} else {
				e.WriteString("%" + string("0123456789ABCDEF"[c>>4]) + string("0123456789ABCDEF"[c&15]))
			}
		}
	}
	return e.String(), true
}

func TestServletView(t *testing.T) {
	for in, want := range map[string]string{
		"/x/..;/admin": "/admin", "/x/%2e%2e;/admin": "/admin", "/.;/admin": "/admin", "/;/admin": "/admin",
		"/x/..;jsessionid=1/admin": "/admin", "/admin;x/users": "/admin/users", "/x/..%3B/admin": "/x/..%3B/admin",
		"/a;x/b": "/a/b", "/x/;jsessionid=1": "/x/", "/x/..;": "/", "/ADMIN": "/ADMIN",
	} {
		if got, ok := servletView(in); !ok || got != want {
			t.Errorf("servletView(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// TestDecidePathParameters: every spelling of a protected path with a
// path parameter is refused as a bad path, or takes the route that a
// servlet container's reading of the forwarded path takes; never the
// broad route with a path the container serves as /admin, /a/b or
// /private.
func TestDecidePathParameters(t *testing.T) {
	pol, err := Parse("p.json", []byte(servletPolicy), Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := &identity.Identity{CN: "alice", NotAfter: time.Now().Add(48 * time.Hour)}
	tests := []struct {
		path   string
		route  string // "" for a refusal before routing
		reason string
		fwd    string // Decision.Path, what the upstream gets
	}{
		{path: "/x/..;/admin", reason: ReasonBadPath},
		{path: "/x/%2e%2e;/admin", reason: ReasonBadPath},
		{path: "/x/%2E%2E;/admin/users", reason: ReasonBadPath},
		{path: "/x/.%2e;/admin", reason: ReasonBadPath},
		{path: "/.;/admin", reason: ReasonBadPath},
		{path: "/%2e;/admin", reason: ReasonBadPath},
		{path: "/;/admin", reason: ReasonBadPath},
		{path: "/x/..;jsessionid=1/admin", reason: ReasonBadPath},
		{path: "/x/%2e%2e;jsessionid=1/admin", reason: ReasonBadPath},
		{path: "/x/..;/private", reason: ReasonBadPath},
		{path: "/;/private/x", reason: ReasonBadPath},
		{path: "/a/..;/a/b", reason: ReasonBadPath},
		{path: "/admin/..;", reason: ReasonBadPath},
		// A parameter on an ordinary segment: matched on the bare segment,
		// forwarded as it is.
		{path: "/admin;x", route: "admin", reason: ReasonNotAllowed, fwd: "/admin;x"},
		{path: "/admin;jsessionid=1/users", route: "admin", reason: ReasonNotAllowed, fwd: "/admin;jsessionid=1/users"},
		{path: "/%61dmin;x/", route: "admin", reason: ReasonNotAllowed, fwd: "/admin;x/"},
		{path: "/private;x", route: "private", reason: ReasonNotAllowed, fwd: "/private;x"},
		{path: "/a;x/b", route: "ab", reason: ReasonNotAllowed, fwd: "/a;x/b"},
		{path: "/a;x/b;y/c", route: "ab", reason: ReasonNotAllowed, fwd: "/a;x/b;y/c"},
		{path: "/a;x/bc", route: "a", fwd: "/a;x/bc"},
		{path: "/x;a/../admin", route: "admin", reason: ReasonNotAllowed, fwd: "/admin"},
		{path: "/x/;jsessionid=1", route: "x", fwd: "/x/;jsessionid=1"},
		{path: "/;jsessionid=1", route: "broad", fwd: "/;jsessionid=1"},
		// An encoded ';' is data: "..;" is a name, not "..", to the
		// container too.
		{path: "/x/..%3B/admin", route: "x", fwd: "/x/..%3B/admin"},
		{path: "/x/..%3b/admin", route: "x", fwd: "/x/..%3B/admin"},
		{path: "/admin%3Bx", route: "broad", fwd: "/admin%3Bx"},
		// Paths are case-sensitive, as Tomcat reads them on Linux.
		{path: "/ADMIN", route: "broad", fwd: "/ADMIN"},
	}
	for _, tt := range tests {
		d := pol.Explain(Request{Host: "h", Path: tt.path}, id, time.Now())
		route := ""
		if d.Route != nil {
			route = d.Route.Name
		}
		if route != tt.route || d.Reason != tt.reason || d.Route != nil && d.Path != tt.fwd {
			t.Errorf("Decide(%q) = route %q, reason %q, path %q (%s); want route %q, reason %q, path %q",
				tt.path, route, d.Reason, d.Path, d.Why, tt.route, tt.reason, tt.fwd)
		}
		if tt.reason == ReasonBadPath && d.Status != 400 {
			t.Errorf("Decide(%q) status = %d; want 400", tt.path, d.Status)
		}
		checkServletRoute(t, pol, tt.path, d)
	}
}

// checkServletRoute fails t when the servlet container's reading of the
// path forwarded for d takes another route than d's.
func checkServletRoute(t *testing.T, pol *Policy, in string, d Decision) {
	t.Helper()
	if d.Route == nil {
		return
	}
	view, ok := servletView(d.Path)
	if !ok {
		return // the container refuses it
	}
	if i := pol.lookup("h", view); i != d.Route.Index-1 {
		t.Errorf("Decide(%q): route %d, forwarded %q; a servlet container reads %q, route %d", in, d.Route.Index, d.Path, view, i+1)
	}
}

// FuzzDecideServletView: whatever the path, the route that decides is the
// route of the servlet container's reading of the path it forwards.
func FuzzDecideServletView(f *testing.F) {
	for _, s := range []string{"/x/..;/admin", "/a;x/b", "/;/admin", "/x/%2e%2e;y/a/b", "/admin;x", "/x/..%3B/admin", "/a/./b;c/..;/d"} {
		f.Add(s)
	}
	pol, err := Parse("p.json", []byte(servletPolicy), Options{})
	if err != nil {
		f.Fatal(err)
	}
	id := &identity.Identity{CN: "admin", NotAfter: time.Now().Add(48 * time.Hour)}
	f.Fuzz(func(t *testing.T, in string) {
		if !strings.HasPrefix(in, "/") {
			return
		}
		checkServletRoute(t, pol, in, pol.Decide(Request{Host: "h", Path: in}, id, time.Now()))
	})
}
