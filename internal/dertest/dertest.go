// Package dertest rewrites DER structures for tests that need inputs no
// encoder will write, such as a PKCS#12 bundle asking for 2^31-1 iterations.
package dertest

import (
	"fmt"
	"math/big"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// PatchInteger re-encodes der with the nth INTEGER of value old (counting
// from 1; 0 means every one) replaced by repl, which must be positive. It
// looks into OCTET STRINGs that hold DER, as PKCS#12's safes do, and fixes
// every enclosing length. Signatures and MACs are left stale.
func PatchInteger(der []byte, old int64, repl *big.Int, nth int) ([]byte, error) {
	seen := 0
	out, ok := patch(der, old, repl, nth, &seen)
	switch {
	case !ok:
		return nil, fmt.Errorf("dertest: input is not DER")
	case seen == 0 || seen < nth:
		return nil, fmt.Errorf("dertest: %d INTEGERs of value %d found, want #%d", seen, old, nth)
	}
	return out, nil
}

func patch(der []byte, old int64, repl *big.Int, nth int, seen *int) ([]byte, bool) {
	in := cryptobyte.String(der)
	var b cryptobyte.Builder
	for !in.Empty() {
		var elem, content cryptobyte.String
		var tag cbasn1.Tag
		if !in.ReadAnyASN1Element(&elem, &tag) {
			return nil, false
		}
		whole := elem
		if !elem.ReadASN1(&content, tag) {
			return nil, false
		}
		body := []byte(content)
		switch {
		case tag == cbasn1.INTEGER:
			v := new(big.Int)
			if whole.ReadASN1Integer(v) && v.IsInt64() && v.Int64() == old {
				*seen++
				if nth == 0 || *seen == nth {
					body = append([]byte{0}, repl.Bytes()...)
					if body[1] < 0x80 {
						body = body[1:]
					}
				}
			}
		case tag&0x20 != 0: // constructed
			inner, ok := patch(body, old, repl, nth, seen)
			if !ok {
				return nil, false
			}
			body = inner
		case tag == cbasn1.OCTET_STRING:
			before := *seen
			if inner, ok := patch(body, old, repl, nth, seen); ok {
				body = inner
			} else {
				*seen = before
			}
		}
		b.AddASN1(tag, func(c *cryptobyte.Builder) { c.AddBytes(body) })
	}
	out, err := b.Bytes()
	return out, err == nil
}
