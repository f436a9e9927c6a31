package policy

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzCleanPath: a clean path is absolute, stable, has no dot or empty
// segment, no path parameter on a dot segment or on an empty one but the
// last, and no encoded '/', and decodes to what Go's URL parser makes of
// it, so that the path the upstream gets is the one routes matched.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/", "/a/../b", "//a//b/", "/%2e%2E/x", "/a%2fb", "/caf%c3%a9", "/a;b/..;/c", "/.%2e/", "/a b", "/%zz", "/x/%2e%2e;j/a", "/;/a", "/a/;j"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := cleanPath(in)
		if err != nil {
			return
		}
		if !strings.HasPrefix(p, "/") || strings.Contains(p, "//") || strings.Contains(strings.ToUpper(p), "%2F") {
			t.Fatalf("cleanPath(%q) = %q", in, p)
		}
		segs := strings.Split(p, "/")
		for i, seg := range segs {
			if seg == "." || seg == ".." {
				t.Fatalf("cleanPath(%q) = %q: dot segment", in, p)
			}
			if bare, _, param := strings.Cut(seg, ";"); param && (bare == "." || bare == ".." || bare == "" && i < len(segs)-1) {
				t.Fatalf("cleanPath(%q) = %q: a parameter on the segment %q", in, p, seg)
			}
		}
		if again, err := cleanPath(p); err != nil || again != p {
			t.Fatalf("cleanPath(%q) = %q, then %q, %v", in, p, again, err)
		}
		u := &url.URL{Path: mustUnescape(t, p), RawPath: p}
		if u.EscapedPath() != p {
			t.Fatalf("cleanPath(%q) = %q, which a URL escapes as %q", in, p, u.EscapedPath())
		}
	})
}

func mustUnescape(t *testing.T, p string) string {
	s, err := url.PathUnescape(p)
	if err != nil {
		t.Fatalf("unescaping %q: %v", p, err)
	}
	return s
}

// FuzzParsePolicy: any input compiles or fails with positioned errors,
// never a panic.
func FuzzParsePolicy(f *testing.F) {
	table, err := os.ReadFile(filepath.Join("testdata", "table.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(table))
	f.Add(`{"routes": [{"host": "*", "refuse": true}]}`)
	f.Add(`{"rules": {"a": {"uri": ["spiffe://x/*"]}}, "routes": [{"host": "*.x", "path": "/a", "upstream": "unix:/s", "rule": "a"}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		pol, err := Parse("p.json", []byte(in), Options{ReadFile: func(string) ([]byte, error) { return nil, errNoFile }})
		if err == nil && len(pol.Routes) == 0 {
			t.Fatal("a policy without routes")
		}
		if pe, ok := err.(Errors); ok && len(pe) == 0 {
			t.Fatal("empty Errors")
		}
	})
}

var errNoFile = &url.Error{Op: "read", URL: "x", Err: url.EscapeError("no file")}
