package proxy

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// EchoHandler returns the demo upstream of `minica echo`: it answers every
// request with 200 and a plain-text body of its request line and its
// headers, Host included, one "Name: value" line each, sorted. It shows
// what an app behind the proxy receives. It never reads the request body,
// and any byte of the request outside printable ASCII is written as \xNN,
// so the body is safe to print on a terminal; a browser gets it as text
// (nosniff), never as HTML.
func EchoHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(w, EchoText(r))
	})
}

// EchoText is the body EchoHandler answers r with.
func EchoText(r *http.Request) string {
	lines := []string{"Host: " + echoEscape(r.Host)}
	for name, values := range r.Header {
		for _, v := range values {
			lines = append(lines, echoEscape(name)+": "+echoEscape(v))
		}
	}
	slices.Sort(lines)
	uri := r.RequestURI
	if uri == "" { // a request built in a test
		uri = r.URL.RequestURI()
	}
	return fmt.Sprintf("%s %s %s\n%s\n", echoEscape(r.Method), echoEscape(uri), echoEscape(r.Proto), strings.Join(lines, "\n"))
}

// echoEscape writes the bytes of s outside printable ASCII as \xNN, and a
// backslash as \\, so that the result reads back unambiguously.
func echoEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b.WriteString(`\\`)
		case c < 0x20 || c > 0x7e:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
