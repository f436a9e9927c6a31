package identity

import "strings"

// Header values never carry a control character or a raw non-ASCII byte.
// Each field has one of these encodings (docs/proxy.md repeats them):
//
//   - text (CN, email, O, OU, DNS and IP SANs): bytes 0x21-0x7E other than
//     '%' pass through, as does an inner space; every other byte, '%', and a
//     leading or trailing space become %XX (uppercase hex) of the UTF-8
//     bytes, so a decoder is url.PathUnescape. In lists (custom fields ou,
//     uri, dns) items are joined by ',' and a ',' inside an item is %2C.
//   - uri (URI SANs): as text, but '%' passes through, since a URI is
//     already percent-encoded.
//   - modssl (the apache profile's CN, email, O and OU): what mod_ssl gives
//     for SSL_CLIENT_S_DN_CN and the like, OpenSSL's ASN1_STRFLGS_ESC_CTRL:
//     '\' becomes \\, control characters \XX; and, where mod_ssl has raw
//     bytes, every byte of a non-ASCII character and a leading or trailing
//     space \XX too.
//   - dn: RFC 4514 with OpenSSL's escaping (see formatDN), pure ASCII.
//   - pem-escaped: the PEM certificate with every byte outside A-Z a-z 0-9
//     - . _ ~ as %XX, nginx's $ssl_client_escaped_cert.
//   - hex, RFC 3339 times, and RFC 8941 byte sequences are ASCII by nature.

func escapeText(s string) string { return percentEncode(s, false, false) }
func escapeURI(s string) string  { return percentEncode(s, true, false) }
func escapeItem(s string) string { return percentEncode(s, false, true) }

func percentEncode(s string, keepPercent, escapeComma bool) string {
	need := false
	for i := 0; i < len(s); i++ {
		if mustEscape(s, i, keepPercent, escapeComma) {
			need = true
			break
		}
	}
	if !need {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if mustEscape(s, i, keepPercent, escapeComma) {
			b.WriteByte('%')
			b.WriteByte(hexUpper[c>>4])
			b.WriteByte(hexUpper[c&0xf])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func mustEscape(s string, i int, keepPercent, escapeComma bool) bool {
	c := s[i]
	switch {
	case c < 0x20 || c >= 0x7f:
		return true
	case c == ' ':
		return i == 0 || i == len(s)-1
	case c == '%':
		return !keepPercent
	case c == ',':
		return escapeComma
	}
	return false
}

// escapeModSSL is the modssl encoding (see above).
func escapeModSSL(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b.WriteString(`\\`)
		case c < 0x20 || c >= 0x7f, c == ' ' && (i == 0 || i == len(s)-1):
			writeHexEscape(&b, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func escapeList(items []string, enc func(string) string) string {
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strings.ReplaceAll(enc(it), ",", "%2C"))
	}
	return b.String()
}

// escapeComponent percent-encodes every byte outside RFC 3986's unreserved
// set, as nginx's ngx_escape_uri(NGX_ESCAPE_URI_COMPONENT) does.
func escapeComponent(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexUpper[c>>4])
		b.WriteByte(hexUpper[c&0xf])
	}
	return b.String()
}

// wireSafe reports whether v may go on the wire as it is: visible ASCII and
// inner spaces only.
func wireSafe(v string) bool {
	for i := 0; i < len(v); i++ {
		if mustEscape(v, i, true, false) {
			return false
		}
	}
	return true
}
