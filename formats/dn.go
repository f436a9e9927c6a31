package formats

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"strings"
)

// DistinguishedName formats a DER Name as an RFC 4514 string: most specific
// RDN first, "+" between the attributes of a multi-valued RDN, special
// characters escaped, values of unknown string types in #hex form.
func DistinguishedName(rawName []byte) (string, error) {
	var seq pkix.RDNSequence
	rest, err := asn1.Unmarshal(rawName, &seq)
	if err != nil {
		return "", fmt.Errorf("parsing distinguished name: %w", err)
	}
	if len(rest) > 0 {
		return "", fmt.Errorf("parsing distinguished name: %s of trailing data", plural(len(rest), "byte", "bytes"))
	}
	rdns := make([]string, 0, len(seq))
	for i := len(seq) - 1; i >= 0; i-- {
		atvs := make([]string, 0, len(seq[i]))
		for _, atv := range seq[i] {
			atvs = append(atvs, formatATV(atv))
		}
		rdns = append(rdns, strings.Join(atvs, "+"))
	}
	return strings.Join(rdns, ","), nil
}

func formatATV(atv pkix.AttributeTypeAndValue) string {
	name, ok := OpenSSLName(atv.Type.String())
	if !ok {
		name = atv.Type.String()
	}
	s, ok := atv.Value.(string)
	if !ok {
		der, err := asn1.Marshal(atv.Value)
		if err != nil {
			return name + "=#"
		}
		return name + "=#" + hex.EncodeToString(der)
	}
	return name + "=" + escapeDNValue(s)
}

// escapeDNValue escapes a value per RFC 4514 section 2.4.
func escapeDNValue(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case strings.ContainsRune(`"+,;<>\`, r),
			i == 0 && (r == ' ' || r == '#'),
			i == len(s)-1 && r == ' ':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == 0:
			b.WriteString(`\00`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

//go:generate go run gen_oidnames.go

// OpenSSLName returns the short name OpenSSL prints for the attribute type
// or object with the dotted OID (its long name where it has no short one),
// and false for an OID OpenSSL does not know. Both minica's DN renderings,
// inspect's RFC 4514 form and the proxy's OpenSSL-compatible headers, name
// attributes by it.
func OpenSSLName(oid string) (string, bool) {
	n, ok := opensslNames()[oid]
	return n, ok
}
