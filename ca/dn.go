package ca

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"strings"
)

// attrNames are the short names RFC 4514 and OpenSSL print for attribute
// types; others print as dotted OIDs.
var attrNames = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.5":                    "serialNumber",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.9":                    "STREET",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"0.9.2342.19200300.100.1.1":  "UID",
	"0.9.2342.19200300.100.1.25": "DC",
	"1.2.840.113549.1.9.1":       "emailAddress",
}

// FormatDN prints a DER-encoded distinguished name (a certificate's
// RawSubject) as an RFC 4514 string, most specific RDN first, naming
// emailAddress as OpenSSL does rather than as a hex OID. Multi-valued RDNs
// are joined with "+". Undecodable input gives "".
func FormatDN(raw []byte) string {
	var rdns pkix.RDNSequence
	if rest, err := asn1.Unmarshal(raw, &rdns); err != nil || len(rest) > 0 {
		return ""
	}
	parts := make([]string, 0, len(rdns))
	for i := len(rdns) - 1; i >= 0; i-- {
		attrs := make([]string, 0, len(rdns[i]))
		for _, atv := range rdns[i] {
			typ, ok := attrNames[atv.Type.String()]
			if !ok {
				typ = atv.Type.String()
			}
			attrs = append(attrs, typ+"="+escapeDNValue(fmt.Sprint(atv.Value)))
		}
		parts = append(parts, strings.Join(attrs, "+"))
	}
	return strings.Join(parts, ",")
}

// escapeDNValue escapes a value by RFC 4514 section 2.4.
func escapeDNValue(v string) string {
	var b strings.Builder
	for i, r := range v {
		switch {
		case strings.ContainsRune(`,+"\<>;`, r),
			i == 0 && (r == ' ' || r == '#'),
			i == len(v)-1 && r == ' ':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
