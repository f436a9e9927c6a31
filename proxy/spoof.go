package proxy

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

// reservedSet is the identity namespace one proxy strips from inbound
// requests: the fixed prefixes and names plus every name of every profile
// and every custom header it may set.
type reservedSet map[string]bool

func newReservedSet(h *Headers) reservedSet {
	set := reservedSet{}
	for n := range reservedNames {
		set[n] = true
	}
	for _, specs := range profiles {
		for _, s := range specs {
			set[normalizeName(s.name)] = true
		}
	}
	for _, n := range h.Names() {
		set[normalizeName(n)] = true
	}
	return set
}

// reserved reports whether an inbound header named name must be removed.
// It runs for every inbound header of every request: the name is
// normalized into a stack buffer, and the lookups convert it without
// allocating.
func (set reservedSet) reserved(name string) bool {
	var buf [64]byte
	n := appendNormalized(buf[:0], name)
	if set[string(n)] {
		return true
	}
	for _, p := range reservedPrefixes {
		if len(n) >= len(p) && string(n[:len(p)]) == p {
			return true
		}
	}
	return false
}

// strip deletes every reserved header from h.
func (set reservedSet) strip(h http.Header) {
	for name := range h {
		if set.reserved(name) {
			delete(h, name)
		}
	}
}
