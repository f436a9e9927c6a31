package identity

import "net/http"

// reservedPrefixes are the normalized (lowercase, '_' read as '-') header
// name prefixes that only the proxy may set: the X-SSL-Client-* namespace of
// the minica, apache and nginx profiles, RFC 9440's Client-Cert*, Envoy's
// XFCC and every X-Forwarded-*.
var reservedPrefixes = []string{"x-ssl-client", "client-cert", "x-forwarded-"}

// reservedNames are normalized header names reserved outright.
var reservedNames = map[string]bool{"forwarded": true, "x-forwarded-client-cert": true}

// normalizeName lowercases name and reads '_' as '-', so that X_SSL_Client_CN
// and x-ssl-client-cn are one name, as some upstreams (CGI, PHP, Django's
// META) treat them.
func normalizeName(name string) string {
	return string(appendNormalized(nil, name))
}

// appendNormalized appends the normalized name to b.
func appendNormalized(b []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		case c == '_':
			c = '-'
		}
		b = append(b, c)
	}
	return b
}

// Namespace is the identity namespace a proxy strips from inbound requests
// before it sets its own headers, so that no client can pose as another:
// the fixed prefixes and names plus every name of every profile and every
// custom header it may set, compared case-insensitively with '_' read as
// '-'. A Namespace is immutable and safe for concurrent use.
type Namespace struct {
	names map[string]bool // normalized
}

// Namespace returns the namespace of a proxy that renders h.
func (h *Headers) Namespace() Namespace {
	names := map[string]bool{}
	for n := range reservedNames {
		names[n] = true
	}
	for _, specs := range profiles {
		for _, s := range specs {
			names[normalizeName(s.name)] = true
		}
	}
	for _, n := range h.Names() {
		names[normalizeName(n)] = true
	}
	return Namespace{names: names}
}

// Holds reports whether an inbound header named name is in the namespace
// and must be removed. It runs for every inbound header of every request:
// the name is normalized into a stack buffer, and the lookups convert it
// without allocating.
func (ns Namespace) Holds(name string) bool {
	var buf [64]byte
	n := appendNormalized(buf[:0], name)
	if ns.names[string(n)] {
		return true
	}
	for _, p := range reservedPrefixes {
		if len(n) >= len(p) && string(n[:len(p)]) == p {
			return true
		}
	}
	return false
}

// Strip deletes every header of the namespace from h.
func (ns Namespace) Strip(h http.Header) {
	for name := range h {
		if ns.Holds(name) {
			delete(h, name)
		}
	}
}
