package revoke

import (
	"bytes"
	"io"
	"math/big"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// peekHead is how much of a CRL PeekCRLNumber reads first: the fields
// before the entries and the header of their list, with room to spare.
const peekHead = 16 << 10

// PeekCRLNumber returns the CRL number of the DER CRL in r, size bytes
// long, reading only the fields before its list of entries and those
// after it: a few kilobytes of a 50 MB CRL. It verifies nothing, not even
// the signature: it is for a CA that compares the number of its own
// published CRL with the numbers it reserved, and reads the CRL verified
// (CRLNumber) only when that number matters. Bytes that are not a DER
// CRL with a CRL number give an error wrapping ErrMalformed.
func PeekCRLNumber(r io.ReaderAt, size int64) (*big.Int, error) {
	w := window{r: r, size: size}
	// CertificateList ::= SEQUENCE { tbsCertList SEQUENCE { version?,
	// signature, issuer, thisUpdate, nextUpdate?, revokedCertificates?,
	// [0] crlExtensions? }, ... }: into both, then over every field to
	// the extensions, the list of entries skipped by its length.
	var pos int64
	for range 2 {
		tag, hdr, _, err := w.header(pos)
		if err != nil || tag != tagSequence {
			return nil, malformed("not a DER CertificateList")
		}
		pos += int64(hdr)
	}
	for {
		tag, hdr, n, err := w.header(pos)
		if err != nil {
			return nil, malformed("no CRL extensions found")
		}
		if tag == 0xa0 { // [0] crlExtensions
			break
		}
		pos += int64(hdr) + int64(n)
	}
	ext, err := w.at(pos)
	if err != nil {
		return nil, err
	}
	in := cryptobyte.String(ext)
	var exts cryptobyte.String
	if !in.ReadASN1(&exts, cbasn1.Tag(0).Constructed().ContextSpecific()) || !exts.ReadASN1(&exts, cbasn1.SEQUENCE) {
		return nil, malformed("invalid CRL extensions")
	}
	for !exts.Empty() {
		oid, _, value, ok := readExtension(&exts)
		if !ok {
			return nil, malformed("invalid CRL extension")
		}
		if bytes.Equal(oid, oidCRLNumber) {
			n := new(big.Int)
			if !value.ReadASN1Integer(n) || n.Sign() < 0 {
				return nil, malformed("invalid CRL number")
			}
			return n, nil
		}
	}
	return nil, malformed("no CRL number")
}

// window is the part of a CRL in r that PeekCRLNumber last read.
type window struct {
	r    io.ReaderAt
	size int64
	off  int64
	b    []byte
}

// at returns the bytes of the CRL from pos, at most peekHead of them,
// reading them when the window does not hold at least a header's worth.
func (w *window) at(pos int64) ([]byte, error) {
	if pos < 0 || pos >= w.size {
		return nil, malformed("truncated CRL")
	}
	if pos < w.off || pos+maxHeader > w.off+int64(len(w.b)) && w.off+int64(len(w.b)) < w.size {
		w.off, w.b = pos, make([]byte, min(w.size-pos, peekHead))
		if _, err := w.r.ReadAt(w.b, pos); err != nil && err != io.EOF {
			return nil, err
		}
	}
	return w.b[pos-w.off:], nil
}

// header reads the DER header at pos (see derHeader).
func (w *window) header(pos int64) (tag byte, hdr, n int, err error) {
	b, err := w.at(pos)
	if err != nil {
		return 0, 0, 0, err
	}
	tag, hdr, n, ok := derHeader(b)
	if !ok {
		return 0, 0, 0, malformed("invalid DER header")
	}
	return tag, hdr, n, nil
}

// derHeader reads the DER header at the start of b: its tag, its length,
// and the length of the content, which may lie beyond b. ok is false for
// a header that b does not hold or that is not DER.
func derHeader(b []byte) (tag byte, hdr, n int, ok bool) {
	if len(b) < 2 {
		return 0, 0, 0, false
	}
	tag, l := b[0], int(b[1])
	if l < 0x80 {
		return tag, 2, l, true
	}
	octets := l & 0x7f
	if octets == 0 || octets > 4 || len(b) < 2+octets {
		return 0, 0, 0, false
	}
	for _, c := range b[2 : 2+octets] {
		n = n<<8 | int(c)
	}
	return tag, 2 + octets, n, true
}
