package identity

import (
	"encoding/asn1"
	"errors"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"minica/formats"
)

// attr is one attribute of a distinguished name: its OpenSSL short name (or
// dotted OID when OpenSSL would not know it) and its value decoded to UTF-8.
type attr struct {
	oid   asn1.ObjectIdentifier
	Name  string
	Value string
	raw   asn1.RawValue
}

type atv struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rdnSET is one relative distinguished name; the SET suffix makes
// encoding/asn1 read it as an ASN.1 SET OF.
type rdnSET []atv

var errTrailingData = errors.New("trailing data after distinguished name")

// parseDN decodes a DER Name into its RDNs in encoding order.
func parseDN(der []byte) ([][]attr, error) {
	var seq []rdnSET
	rest, err := asn1.Unmarshal(der, &seq)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, errTrailingData
	}
	out := make([][]attr, 0, len(seq))
	for _, set := range seq {
		rdn := make([]attr, 0, len(set))
		for _, a := range set {
			rdn = append(rdn, attr{oid: a.Type, Name: attrName(a.Type), Value: decodeString(a.Value), raw: a.Value})
		}
		out = append(out, rdn)
	}
	return out, nil
}

// attrName returns OpenSSL's short name for an attribute type, or its dotted
// form when OpenSSL does not know it.
func attrName(oid asn1.ObjectIdentifier) string {
	s := oid.String()
	if n, ok := formats.OpenSSLName(s); ok {
		return n
	}
	return s
}

// ASN.1 universal tags of the string types OpenSSL prints as text.
const (
	tagUTF8      = 12
	tagNumeric   = 18
	tagPrintable = 19
	tagT61       = 20
	tagIA5       = 22
	tagUTCTime   = 23
	tagGenTime   = 24
	tagVisible   = 26
	tagUniversal = 28
	tagBMP       = 30
)

// decodeString returns the value as UTF-8 text, the way OpenSSL's
// ASN1_STRFLGS_UTF8_CONVERT reads it: one-byte types as Latin-1, BMP as
// UCS-2, UniversalString as UCS-4. Other types return "".
func decodeString(v asn1.RawValue) string {
	if v.Class != asn1.ClassUniversal {
		return ""
	}
	switch v.Tag {
	case tagUTF8:
		return string(v.Bytes)
	case tagNumeric, tagPrintable, tagT61, tagIA5, tagUTCTime, tagGenTime, tagVisible:
		var b strings.Builder
		for _, c := range v.Bytes {
			b.WriteRune(rune(c))
		}
		return b.String()
	case tagBMP:
		u := make([]uint16, 0, len(v.Bytes)/2)
		for i := 0; i+1 < len(v.Bytes); i += 2 {
			u = append(u, uint16(v.Bytes[i])<<8|uint16(v.Bytes[i+1]))
		}
		return string(utf16.Decode(u))
	case tagUniversal:
		var b strings.Builder
		for i := 0; i+3 < len(v.Bytes); i += 4 {
			b.WriteRune(rune(uint32(v.Bytes[i])<<24 | uint32(v.Bytes[i+1])<<16 | uint32(v.Bytes[i+2])<<8 | uint32(v.Bytes[i+3])))
		}
		return b.String()
	}
	return ""
}

func isTextType(v asn1.RawValue) bool {
	if v.Class != asn1.ClassUniversal {
		return false
	}
	switch v.Tag {
	case tagUTF8, tagNumeric, tagPrintable, tagT61, tagIA5, tagUTCTime, tagGenTime, tagVisible, tagUniversal, tagBMP:
		return true
	}
	return false
}

// FormatDN renders the DER Name der as Identity.DN does (see formatDN):
// how a policy's "issuer" names a CA by its subject.
func FormatDN(der []byte) (string, error) {
	rdns, err := parseDN(der)
	if err != nil {
		return "", err
	}
	return formatDN(rdns), nil
}

// formatDN renders RDNs as OpenSSL's X509_NAME_print_ex with XN_FLAG_RFC2253
// does (nginx's $ssl_client_s_dn): RDNs and the members of a multi-valued
// RDN in reverse order, "," between RDNs and "+" inside one, OpenSSL's short
// attribute names (formats.OpenSSLName), the RFC 2253 specials ,+"\<>; escaped with
// a backslash, '#' first (unless it is the whole value) and ' ' first or
// last escaped with a backslash, control characters and every byte of a
// non-ASCII UTF-8 sequence as \XX, and attributes OpenSSL does not know, or
// values that are no string, as #hex of the DER.
//
// Two deliberate differences keep the value safe in an HTTP header: a
// trailing escaped space "\ " is written "\20" (the same RFC 4514 value), as
// HTTP strips trailing whitespace from field values; and non-ASCII stays
// escaped where mod_ssl's SSL_CLIENT_S_DN has raw UTF-8.
func formatDN(rdns [][]attr) string {
	var b strings.Builder
	first := true
	for i := len(rdns) - 1; i >= 0; i-- {
		rdn := rdns[i]
		for j := len(rdn) - 1; j >= 0; j-- {
			if !first {
				if j == len(rdn)-1 {
					b.WriteByte(',')
				} else {
					b.WriteByte('+')
				}
			}
			first = false
			a := rdn[j]
			b.WriteString(a.Name)
			b.WriteByte('=')
			if _, known := formats.OpenSSLName(a.oid.String()); !known || !isTextType(a.raw) {
				writeDERHex(&b, a.raw.FullBytes)
				continue
			}
			escapeDNValue(&b, a.Value)
		}
	}
	s := b.String()
	if strings.HasSuffix(s, `\ `) {
		s = s[:len(s)-2] + `\20`
	}
	return s
}

const hexUpper = "0123456789ABCDEF"

func writeDERHex(b *strings.Builder, der []byte) {
	b.WriteByte('#')
	for _, c := range der {
		b.WriteByte(hexUpper[c>>4])
		b.WriteByte(hexUpper[c&0xf])
	}
}

func escapeDNValue(b *strings.Builder, v string) {
	for i := 0; i < len(v); {
		r, size := utf8.DecodeRuneInString(v[i:])
		last := i+size == len(v)
		if r >= utf8.RuneSelf || r == utf8.RuneError {
			for k := 0; k < size; k++ {
				writeHexEscape(b, v[i+k])
			}
			i += size
			continue
		}
		c := byte(r)
		switch {
		case strings.IndexByte(`,+"\<>;`, c) >= 0,
			c == '#' && i == 0 && !last, // a lone '#' stays bare, as OpenSSL writes it
			c == ' ' && (i == 0 || last):
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			writeHexEscape(b, c)
		default:
			b.WriteByte(c)
		}
		i += size
	}
}

func writeHexEscape(b *strings.Builder, c byte) {
	b.WriteByte('\\')
	b.WriteByte(hexUpper[c>>4])
	b.WriteByte(hexUpper[c&0xf])
}

// firstValue returns the value of the first attribute with the given OID in
// encoding order, and whether there was one.
func firstValue(rdns [][]attr, oid asn1.ObjectIdentifier) (string, bool) {
	for _, rdn := range rdns {
		for _, a := range rdn {
			if a.oid.Equal(oid) {
				return a.Value, true
			}
		}
	}
	return "", false
}

var (
	oidCN           = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidO            = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOU           = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidEmailAddress = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
)

// allValues returns the values of every attribute with the given OID.
func allValues(rdns [][]attr, oid asn1.ObjectIdentifier) []string {
	var out []string
	for _, rdn := range rdns {
		for _, a := range rdn {
			if a.oid.Equal(oid) {
				out = append(out, a.Value)
			}
		}
	}
	return out
}
