package policy

import (
	"errors"
	"fmt"
	"strings"
)

// normHost is a Host header, :authority or SNI as routes match it: without
// the port, without one trailing dot, ASCII letters lowercased.
func normHost(h string) string {
	if strings.HasPrefix(h, "[") {
		if end := strings.IndexByte(h, ']'); end > 0 {
			h = h[:end+1]
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.IndexByte(h[:i], ':') < 0 {
		h = h[:i]
	}
	return lowerASCII(strings.TrimSuffix(h, "."))
}

// parseHostPattern checks a route's host: "*", "*.DOMAIN" (exactly one
// label in front of DOMAIN) or a name, ASCII only (IDNs in their xn--
// form), returned lowercase without a trailing dot.
func parseHostPattern(s string) (string, error) {
	if s == "*" {
		return s, nil
	}
	name, wild := strings.CutPrefix(s, "*.")
	name = strings.TrimSuffix(name, ".")
	if name == "" {
		return "", errors.New("want NAME, *.DOMAIN or *")
	}
	if strings.Contains(name, "*") {
		return "", errors.New("'*' only as the whole first label, as in *.example.com")
	}
	if strings.Contains(name, ":") && !wild && strings.HasPrefix(name, "[") && strings.HasSuffix(name, "]") {
		return lowerASCII(name), nil // an IPv6 literal
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return "", errors.New("empty or over-long label")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				if c == ':' {
					return "", errors.New("no port: routes match the host whatever the port")
				}
				if c >= 0x80 {
					return "", errors.New("ASCII only: write an internationalized name in its xn-- form")
				}
				return "", fmt.Errorf("%q is not allowed in a host name", c)
			}
		}
	}
	host := lowerASCII(name)
	if wild {
		return "*." + host, nil
	}
	return host, nil
}

// parsePathPrefix checks a route's path prefix: absolute, already clean
// (cleanPath leaves it as it is, once its non-ASCII and other bytes are
// percent-encoded), without a trailing '/' unless it is "/".
func parsePathPrefix(s string) (string, error) {
	if !strings.HasPrefix(s, "/") {
		return "", errors.New("want an absolute path such as /admin")
	}
	if strings.ContainsAny(s, "?#;") {
		return "", errors.New("a path prefix has no query, fragment or ';'")
	}
	p, err := cleanPath(s)
	if err != nil {
		return "", err
	}
	if len(p) > 1 && strings.HasSuffix(p, "/") {
		return "", fmt.Errorf("no trailing '/': %q matches %s and everything under it", strings.TrimSuffix(p, "/"), strings.TrimSuffix(p, "/"))
	}
	if p != encodePathBytes(s) {
		return "", fmt.Errorf("not a clean path: requests are matched as %q", p)
	}
	return p, nil
}

// encodePathBytes percent-encodes the bytes of s that cleanPath would, and
// uppercases the hex digits of its escapes, nothing else.
func encodePathBytes(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' && !pathLiteral(c) {
			b = append(b, '%', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&15])
			continue
		}
		b = append(b, c)
	}
	return upperEscapes(string(b))
}

// upperEscapes uppercases the hex digits of percent-escapes.
func upperEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = upperHex(b[i+1]), upperHex(b[i+2])
		}
	}
	return string(b)
}

func upperHex(c byte) byte {
	if 'a' <= c && c <= 'f' {
		return c - 'a' + 'A'
	}
	return c
}

// pathLiteral reports whether c stays as it is in a clean path: RFC 3986
// pchar (unreserved, sub-delims, ':' and '@') or '/'.
func pathLiteral(c byte) bool {
	return unreserved(c) || c == '/' || c == ':' || c == '@' || strings.IndexByte("!$&'()*+,;=", c) >= 0
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// cleanPath returns the path routes match and the upstream gets, from the
// percent-encoded path of a request: percent-encoded unreserved characters
// (RFC 3986 section 2.3) decoded, the other escapes kept with uppercase hex
// (an encoded reserved character is not the character), other bytes
// outside pchar encoded, then "." and ".." segments resolved (never above
// "/") and empty segments ("//") removed; a trailing '/' stays. An encoded
// '/' or '\', a raw '\', an encoded control character (%00 to %1F, %7F) or
// a '%' not followed by two hex digits is an error: upstreams disagree on
// what they mean. So is a path parameter (a literal ';' and what follows
// it in its segment) on a segment that is ".", ".." or empty before it,
// but for an empty last segment ("/app/;jsessionid=1"): a servlet
// container strips the parameters before it resolves dots, so "/x/..;/a"
// is "/a" to it and "/x/..;/a" to everyone else. A parameter on another
// segment stays; an encoded ';' (%3B) is data, to servlet containers too.
func cleanPath(p string) (string, error) {
	if p == "" {
		return "/", nil
	}
	if p[0] != '/' {
		return "", errors.New("the path is not absolute")
	}
	if isClean(p) {
		return p, nil
	}
	buf := make([]byte, 0, len(p)+8)
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '%':
			if i+2 >= len(p) {
				return "", errors.New("'%' not followed by two hex digits")
			}
			hi, ok1 := unhex(p[i+1])
			lo, ok2 := unhex(p[i+2])
			if !ok1 || !ok2 {
				return "", errors.New("'%' not followed by two hex digits")
			}
			v := hi<<4 | lo
			switch {
			case v == '/' || v == '\\':
				return "", fmt.Errorf("an encoded %q (%%%02X) in the path", v, v)
			case v < 0x20 || v == 0x7f:
				return "", fmt.Errorf("an encoded control character (%%%02X) in the path", v)
			case unreserved(v):
				buf = append(buf, v)
			default:
				buf = append(buf, '%', "0123456789ABCDEF"[hi], "0123456789ABCDEF"[lo])
			}
			i += 2
		case c == '\\':
			return "", errors.New("a '\\' in the path")
		case c < 0x20 || c == 0x7f:
			return "", errors.New("a control character in the path")
		case pathLiteral(c):
			buf = append(buf, c)
		default:
			buf = append(buf, '%', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&15])
		}
	}
	return removeDotSegments(string(buf))
}

// isClean reports whether cleanPath would return p as it is, cheaply, so
// that a clean path costs no allocation. A path parameter on a segment
// that is empty, "." or ".." before it is not clean (see cleanPath).
func isClean(p string) bool {
	seg, param := 1, false // where the segment starts; whether it has a ';'
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '%' || !pathLiteral(c) {
			return false
		}
		switch c {
		case '/':
			if i+1 < len(p) {
				switch n := p[i+1]; {
				case n == '/':
					return false
				case n == '.' && (i+2 == len(p) || p[i+2] == '/' || p[i+2] == '.' && (i+3 == len(p) || p[i+3] == '/')):
					return false
				}
			}
			seg, param = i+1, false
		case ';':
			if !param {
				if bare := p[seg:i]; bare == "" || bare == "." || bare == ".." {
					return false
				}
				param = true
			}
		}
	}
	return true
}

// removeDotSegments resolves "." and ".." and drops empty segments of an
// absolute path whose only separators are literal '/'; a path parameter
// on a segment that is ".", ".." or empty before it (but for the last) is
// an error (see cleanPath).
func removeDotSegments(p string) (string, error) {
	segs := strings.Split(p[1:], "/")
	out := make([]string, 0, len(segs))
	trailing := false
	for i, s := range segs {
		last := i == len(segs)-1
		if bare, _, param := strings.Cut(s, ";"); param {
			switch {
			case bare == "." || bare == "..":
				return "", fmt.Errorf("a path parameter on the dot segment %q", s)
			case bare == "" && !last:
				return "", fmt.Errorf("a path parameter on an empty segment (%q) before the end of the path", s)
			}
		}
		switch s {
		case "", ".":
			trailing = last
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			trailing = last
		default:
			out = append(out, s)
			trailing = false
		}
	}
	clean := "/" + strings.Join(out, "/")
	if trailing && len(out) > 0 {
		clean += "/"
	}
	return clean, nil
}

// barePath is the clean path p as routes match it: without the path
// parameters of its segments (";" and what follows it up to the next '/'),
// as servlet containers read it, so that "/admin;jsessionid=1/x" takes the
// route of /admin/x. cleanPath left no parameter on a dot segment nor on
// an empty one but the last, whose bare form is the trailing '/'.
func barePath(p string) string {
	if strings.IndexByte(p, ';') < 0 {
		return p
	}
	b := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		if p[i] == ';' {
			for i+1 < len(p) && p[i+1] != '/' {
				i++
			}
			continue
		}
		b = append(b, p[i])
	}
	return string(b)
}
