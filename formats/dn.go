package formats

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"strings"
)

// attrNames are the short names openssl and RFC 4514 use for attribute
// types, plus emailAddress, which Go's pkix.Name.String prints as an OID.
var attrNames = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.5":                    "serialNumber",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.9":                    "street",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.12":                   "title",
	"2.5.4.17":                   "postalCode",
	"2.5.4.42":                   "GN",
	"2.5.4.4":                    "SN",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
	"1.2.840.113549.1.9.1":       "emailAddress",
}

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
	name, ok := attrNames[atv.Type.String()]
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
