package proxy

import (
	"net/http"
	"strings"
)

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
	b := []byte(name)
	for i, c := range b {
		switch {
		case 'A' <= c && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case c == '_':
			b[i] = '-'
		}
	}
	return string(b)
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
func (set reservedSet) reserved(name string) bool {
	n := normalizeName(name)
	if set[n] {
		return true
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(n, p) {
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
