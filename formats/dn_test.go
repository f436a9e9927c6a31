package formats_test

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"

	"minica/formats"
)

func TestDistinguishedName(t *testing.T) {
	email := asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	tests := []struct {
		name string
		rdns pkix.RDNSequence
		want string
	}{
		{"order reversed", pkix.Name{Country: []string{"DE"}, Organization: []string{"Acme"}, CommonName: "alice"}.ToRDNSequence(),
			"CN=alice,O=Acme,C=DE"},
		{"email named", pkix.RDNSequence{{{Type: email, Value: "a@example.com"}}, {{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "a"}}},
			"CN=a,emailAddress=a@example.com"},
		{"special characters", pkix.Name{CommonName: `a,b+c"d\e<f>g;h`}.ToRDNSequence(), `CN=a\,b\+c\"d\\e\<f\>g\;h`},
		{"leading hash and spaces", pkix.Name{CommonName: "#x y "}.ToRDNSequence(), `CN=\#x y\ `},
		{"leading space", pkix.Name{CommonName: " x"}.ToRDNSequence(), `CN=\ x`},
		{"multi-valued RDN", pkix.RDNSequence{{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "a"}, {Type: asn1.ObjectIdentifier{2, 5, 4, 11}, Value: "b"}}},
			"CN=a+OU=b"},
		{"unknown type", pkix.RDNSequence{{{Type: asn1.ObjectIdentifier{1, 2, 3}, Value: "v"}}}, "1.2.3=v"},
		{"non-string value", pkix.RDNSequence{{{Type: asn1.ObjectIdentifier{1, 2, 3}, Value: 5}}}, "1.2.3=#020105"},
		{"UTF-8 kept", pkix.Name{CommonName: "Jürgen"}.ToRDNSequence(), "CN=Jürgen"},
		{"empty", pkix.RDNSequence{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			der, err := asn1.Marshal(tt.rdns)
			if err != nil {
				t.Fatal(err)
			}
			got, err := formats.DistinguishedName(der)
			if err != nil || got != tt.want {
				t.Errorf("DistinguishedName() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := formats.DistinguishedName([]byte{0x30, 0x05}); errString(err) != "parsing distinguished name: asn1: syntax error: data truncated" {
		t.Errorf("DistinguishedName(truncated) error = %v", err)
	}
	if _, err := formats.DistinguishedName([]byte{0x30, 0x00, 0x00}); errString(err) != "parsing distinguished name: 1 byte of trailing data" {
		t.Errorf("DistinguishedName(trailing) error = %v", err)
	}
}
