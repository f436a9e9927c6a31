package formats

import (
	"errors"
	"fmt"
)

// Some peers write BER where DER is expected: NSS's pk12util (and so
// Firefox's certificate export) writes PKCS#12 with indefinite lengths and
// chunked OCTET STRINGs. encoding/asn1, and go-pkcs12 with it, read only
// DER, so berToDER rewrites such input with definite lengths and joined
// strings. The content octets, and so a PKCS#12 MAC over them, are
// unchanged.

// maxBERDepth bounds the nesting berToDER follows, against stack
// exhaustion by crafted input.
const maxBERDepth = 32

var errBERDepth = errors.New("BER nesting too deep")

// berToDER returns data as definite-length DER. Ending early gives an error
// matching ErrTruncated.
func berToDER(data []byte) ([]byte, error) {
	out, rest, err := convertBER(data, 0)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("%w: %s of trailing data after the BER structure", ErrMalformed, plural(len(rest), "byte", "bytes"))
	}
	return out, nil
}

// convertBER converts the element at the start of in and returns the rest.
func convertBER(in []byte, depth int) (out, rest []byte, err error) {
	if depth > maxBERDepth {
		return nil, nil, fmt.Errorf("%w: %w", ErrMalformed, errBERDepth)
	}
	tag, in, err := readBERTag(in)
	if err != nil {
		return nil, nil, err
	}
	length, indefinite, in, err := readBERLength(in)
	if err != nil {
		return nil, nil, err
	}
	constructed := tag[0]&0x20 != 0
	if !constructed {
		if indefinite {
			return nil, nil, fmt.Errorf("%w: indefinite length on a primitive BER element", ErrMalformed)
		}
		return append(derHeader(tag, length), in[:length]...), in[length:], nil
	}
	var body []byte
	if indefinite {
		body, rest, err = convertChildren(in, depth, true)
	} else {
		body, _, err = convertChildren(in[:length], depth, false)
		rest = in[length:]
	}
	if err != nil {
		return nil, nil, err
	}
	if len(tag) == 1 && tag[0] == 0x24 { // constructed OCTET STRING: join the chunks
		if body, err = joinOctetStrings(body); err != nil {
			return nil, nil, err
		}
		tag = []byte{0x04}
	}
	return append(derHeader(tag, len(body)), body...), rest, nil
}

// convertChildren converts elements until in is used up or, for an
// indefinite length, until the end-of-contents octets.
func convertChildren(in []byte, depth int, indefinite bool) (body, rest []byte, err error) {
	for {
		if indefinite {
			if len(in) < 2 {
				return nil, nil, fmt.Errorf("%w: BER element without end-of-contents", ErrTruncated)
			}
			if in[0] == 0 && in[1] == 0 {
				return body, in[2:], nil
			}
		} else if len(in) == 0 {
			return body, nil, nil
		}
		var child []byte
		child, in, err = convertBER(in, depth+1)
		if err != nil {
			return nil, nil, err
		}
		body = append(body, child...)
	}
}

// joinOctetStrings concatenates the contents of the DER OCTET STRINGs in
// body.
func joinOctetStrings(body []byte) ([]byte, error) {
	var joined []byte
	for len(body) > 0 {
		tag, rest, err := readBERTag(body)
		if err != nil {
			return nil, err
		}
		if len(tag) != 1 || tag[0] != 0x04 {
			return nil, fmt.Errorf("%w: a chunked OCTET STRING holds tag %#x", ErrMalformed, tag[0])
		}
		length, _, rest, err := readBERLength(rest)
		if err != nil {
			return nil, err
		}
		joined = append(joined, rest[:length]...)
		body = rest[length:]
	}
	return joined, nil
}

func readBERTag(in []byte) (tag, rest []byte, err error) {
	if len(in) == 0 {
		return nil, nil, fmt.Errorf("%w: BER element missing", ErrTruncated)
	}
	n := 1
	if in[0]&0x1f == 0x1f { // high tag number: base-128 octets follow
		for {
			if n >= len(in) {
				return nil, nil, fmt.Errorf("%w: BER tag cut short", ErrTruncated)
			}
			if n > 4 {
				return nil, nil, fmt.Errorf("%w: BER tag number too large", ErrMalformed)
			}
			n++
			if in[n-1]&0x80 == 0 {
				break
			}
		}
	}
	return in[:n], in[n:], nil
}

func readBERLength(in []byte) (length int, indefinite bool, rest []byte, err error) {
	if len(in) == 0 {
		return 0, false, nil, fmt.Errorf("%w: BER length missing", ErrTruncated)
	}
	b := in[0]
	in = in[1:]
	switch {
	case b == 0x80:
		return 0, true, in, nil
	case b < 0x80:
		length = int(b)
	default:
		n := int(b & 0x7f)
		if n > 4 {
			return 0, false, nil, fmt.Errorf("%w: BER length of %d octets", ErrMalformed, n)
		}
		if len(in) < n {
			return 0, false, nil, fmt.Errorf("%w: BER length cut short", ErrTruncated)
		}
		for _, c := range in[:n] {
			length = length<<8 | int(c)
		}
		in = in[n:]
	}
	if length > len(in) {
		return 0, false, nil, fmt.Errorf("%w: BER element announces %d bytes, only %d present", ErrTruncated, length, len(in))
	}
	return length, false, in, nil
}

// derHeader encodes a tag and a definite length.
func derHeader(tag []byte, length int) []byte {
	h := append([]byte(nil), tag...)
	switch {
	case length < 0x80:
		return append(h, byte(length))
	case length < 0x100:
		return append(h, 0x81, byte(length))
	case length < 0x10000:
		return append(h, 0x82, byte(length>>8), byte(length))
	case length < 0x1000000:
		return append(h, 0x83, byte(length>>16), byte(length>>8), byte(length))
	}
	return append(h, 0x84, byte(length>>24), byte(length>>16), byte(length>>8), byte(length))
}

// normalizeDER returns data itself when it is one complete DER element, or
// its DER form when it is BER. When neither, it returns checkDER's error,
// which tells a truncated file from a damaged one.
func normalizeDER(data []byte) ([]byte, error) {
	derErr := checkDER(data)
	if derErr == nil || errors.Is(derErr, ErrTruncated) {
		return data, derErr
	}
	der, err := berToDER(data)
	if err != nil {
		if errors.Is(err, ErrTruncated) {
			return nil, err
		}
		return nil, derErr
	}
	if checkDER(der) != nil {
		return nil, derErr
	}
	return der, nil
}
