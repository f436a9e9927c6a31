package h1direct

import (
	"fmt"
	"net/http"

	"minica/internal/httptoken"
)

// checkOutHeaders makes the checks of net/http's Transport on the
// outbound header: field names are tokens, values hold no control
// character but HTAB.
func checkOutHeaders(h http.Header) error {
	for k, vs := range h {
		if !httptoken.Valid(k) {
			return fmt.Errorf("net/http: invalid header field name %q", k)
		}
		for _, v := range vs {
			if !ValidFieldValue(v) {
				return fmt.Errorf("net/http: invalid header field value for %q", k)
			}
		}
	}
	return nil
}

// ValidFieldValue reports whether v is an RFC 9110 field value: no
// control character but HTAB, no DEL. It looks at sixteen bytes at a time
// and at single bytes only in words that hold a control byte, an HTAB
// or a DEL: it checks every field a client sends, on every request, and
// the proxy's identity fields (the default profile's ~1.2 KB escaped
// certificate among them) each time they are rendered.
func ValidFieldValue(v string) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	for len(v) >= 16 {
		_ = v[15]
		x := uint64(v[0]) | uint64(v[1])<<8 | uint64(v[2])<<16 | uint64(v[3])<<24 |
			uint64(v[4])<<32 | uint64(v[5])<<40 | uint64(v[6])<<48 | uint64(v[7])<<56
		y := uint64(v[8]) | uint64(v[9])<<8 | uint64(v[10])<<16 | uint64(v[11])<<24 |
			uint64(v[12])<<32 | uint64(v[13])<<40 | uint64(v[14])<<48 | uint64(v[15])<<56
		dx, dy := x^0x7f*ones, y^0x7f*ones
		// A byte below 0x20 (its high bit clear), or one equal to 0x7f.
		if ((x-0x20*ones)&^x|(dx-ones)&^dx|(y-0x20*ones)&^y|(dy-ones)&^dy)&highs != 0 &&
			!validFieldBytes(v[:16]) {
			return false
		}
		v = v[16:]
	}
	return validFieldBytes(v)
}

// validFieldBytes is ValidFieldValue one byte at a time.
func validFieldBytes(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
