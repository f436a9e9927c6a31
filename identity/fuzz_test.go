package identity

import (
	"testing"
)

// FuzzFormatDN feeds arbitrary DER to the DN parser: it must never panic,
// and whatever it formats must be wire-safe ASCII.
func FuzzFormatDN(f *testing.F) {
	id := goldenIdentity(f)
	f.Add(id.Cert.RawSubject)
	f.Add(id.Cert.RawIssuer)
	f.Add([]byte{0x30, 0x00})
	f.Add([]byte{0x30, 0x0b, 0x31, 0x09, 0x30, 0x07, 0x06, 0x03, 0x55, 0x04, 0x03, 0x1e, 0x00})
	f.Fuzz(func(t *testing.T, der []byte) {
		rdns, err := parseDN(der)
		if err != nil {
			return
		}
		dn := formatDN(rdns)
		if !wireSafe(dn) {
			t.Fatalf("formatDN = %q: not wire-safe", dn)
		}
		for _, rdn := range rdns {
			for _, a := range rdn {
				if v := escapeText(a.Value); !wireSafe(v) {
					t.Fatalf("escapeText(%q) = %q: not wire-safe", a.Value, v)
				}
			}
		}
	})
}
