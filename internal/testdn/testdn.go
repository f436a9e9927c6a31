package testdn

import (
	"encoding/asn1"
	"strconv"
	"strings"
	"testing"
)

// Attribute types of the tests' names.
var (
	C            = asn1.ObjectIdentifier{2, 5, 4, 6}
	CN           = asn1.ObjectIdentifier{2, 5, 4, 3}
	O            = asn1.ObjectIdentifier{2, 5, 4, 10}
	OU           = asn1.ObjectIdentifier{2, 5, 4, 11}
	EmailAddress = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	// Unknown is an attribute type that neither OpenSSL nor minica names.
	Unknown = asn1.ObjectIdentifier{1, 2, 3, 4}
)

// ATV is one attribute of an RDN: its type and its value as encoded.
type ATV struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// RDNSET is one relative distinguished name; encoding/asn1 writes a type
// whose name ends in SET as a SET OF.
type RDNSET []ATV

// One is the RDN of one attribute.
func One(oid asn1.ObjectIdentifier, v asn1.RawValue) RDNSET { return RDNSET{{Type: oid, Value: v}} }

// Multi is a multi-valued RDN, its attributes in the order given.
func Multi(atvs ...ATV) RDNSET { return RDNSET(atvs) }

// Name returns the DER of the Name of rdns, in the order given (the DN
// string shows them reversed), or fails t.
func Name(t testing.TB, rdns ...RDNSET) []byte {
	t.Helper()
	der, err := asn1.Marshal(rdns)
	if err != nil {
		t.Fatalf("marshaling name: %v", err)
	}
	return der
}

// OID parses a dotted object identifier of a test table; it panics on a
// malformed one.
func OID(s string) asn1.ObjectIdentifier {
	var o asn1.ObjectIdentifier
	for _, arc := range strings.Split(s, ".") {
		n, err := strconv.Atoi(arc)
		if err != nil {
			panic("testdn: bad OID in a test table: " + s)
		}
		o = append(o, n)
	}
	return o
}

// UTF8 is s as a UTF8String.
func UTF8(s string) asn1.RawValue { return str(asn1.TagUTF8String, []byte(s)) }

// IA5 is s as an IA5String.
func IA5(s string) asn1.RawValue { return str(asn1.TagIA5String, []byte(s)) }

// Printable is s as a PrintableString.
func Printable(s string) asn1.RawValue { return str(asn1.TagPrintableString, []byte(s)) }

// T61 is the bytes of s as a T61String, which OpenSSL reads as Latin-1.
func T61(s string) asn1.RawValue { return str(asn1.TagT61String, []byte(s)) }

// BMP is s as a BMPString (UCS-2, big-endian).
func BMP(s string) asn1.RawValue {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r>>8), byte(r))
	}
	return str(asn1.TagBMPString, b)
}

func str(tag int, b []byte) asn1.RawValue { return asn1.RawValue{Tag: tag, Bytes: b} }
