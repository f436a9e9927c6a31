package revoke

import (
	"errors"
	"math/big"
	"time"
)

// DER tags used by the hand-written encoders and decoders.
const (
	tagInteger         = 0x02
	tagOctetString     = 0x04
	tagOID             = 0x06
	tagEnumerated      = 0x0a
	tagUTCTime         = 0x17
	tagGeneralizedTime = 0x18
	tagSequence        = 0x30
)

// maxHeader is the longest DER header this package writes: a tag and a
// long-form length of up to four octets.
const maxHeader = 6

// maxSerialOctets is the RFC 5280 section 4.1.2.2 limit on serial numbers,
// counted as DER content octets (a leading zero octet counts).
const maxSerialOctets = 20

// appendHeader appends the DER tag and length octets for a value of n bytes.
func appendHeader(b []byte, tag byte, n int) []byte {
	b = append(b, tag)
	switch {
	case n < 0x80:
		return append(b, byte(n))
	case n <= 0xff:
		return append(b, 0x81, byte(n))
	case n <= 0xffff:
		return append(b, 0x82, byte(n>>8), byte(n))
	case n <= 0xffffff:
		return append(b, 0x83, byte(n>>16), byte(n>>8), byte(n))
	default:
		return append(b, 0x84, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

// headerLen returns the size of the DER header for a value of n bytes.
func headerLen(n int) int {
	var tmp [maxHeader]byte
	return len(appendHeader(tmp[:0], 0, n))
}

// putHeader writes the header for a value of n bytes so that it ends at
// b[end], and returns the index where it starts.
func putHeader(b []byte, end int, tag byte, n int) int {
	var tmp [maxHeader]byte
	h := appendHeader(tmp[:0], tag, n)
	copy(b[end-len(h):end], h)
	return end - len(h)
}

// positiveIntBytes writes the minimal DER content octets of the positive
// integer n into buf and returns them. It reports false when they would not
// fit in buf.
func positiveIntBytes(n *big.Int, buf []byte) ([]byte, bool) {
	l := n.BitLen()/8 + 1 // one more octet when the top bit is set
	if l > len(buf) {
		return nil, false
	}
	return n.FillBytes(buf[:l]), true
}

var errTimeRange = errors.New("year outside 0000-9999")

// appendTime appends t as a DER Time: UTCTime for the years 1950 to 2049 and
// GeneralizedTime otherwise (RFC 5280 section 5.1.2.4), in UTC to the second.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	t = t.UTC()
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	if year < 0 || year > 9999 {
		return b, errTimeRange
	}
	if year >= 1950 && year < 2050 {
		b = append(b, tagUTCTime, 13)
		b = append2(b, year%100)
	} else {
		b = append(b, tagGeneralizedTime, 15)
		b = append2(b, year/100)
		b = append2(b, year%100)
	}
	b = append2(b, int(month))
	b = append2(b, day)
	b = append2(b, hour)
	b = append2(b, minute)
	b = append2(b, sec)
	return append(b, 'Z'), nil
}

func append2(b []byte, v int) []byte {
	return append(b, byte('0'+v/10), byte('0'+v%10))
}

// parseTime decodes the content of a DER UTCTime or GeneralizedTime in the
// strict form RFC 5280 section 4.1.2.5 requires: seconds present, Zulu, no
// fractions.
func parseTime(tag byte, v []byte) (time.Time, bool) {
	var year int
	switch {
	case tag == tagUTCTime && len(v) == 13:
		y, ok := digits2(v[0:2])
		if !ok {
			return time.Time{}, false
		}
		year = 1900 + y
		if y < 50 {
			year = 2000 + y
		}
		v = v[2:]
	case tag == tagGeneralizedTime && len(v) == 15:
		c, ok1 := digits2(v[0:2])
		y, ok2 := digits2(v[2:4])
		if !ok1 || !ok2 {
			return time.Time{}, false
		}
		year = c*100 + y
		v = v[4:]
	default:
		return time.Time{}, false
	}
	var f [5]int
	for i := range f {
		d, ok := digits2(v[2*i : 2*i+2])
		if !ok {
			return time.Time{}, false
		}
		f[i] = d
	}
	if v[10] != 'Z' {
		return time.Time{}, false
	}
	month, day, hour, minute, sec := f[0], f[1], f[2], f[3], f[4]
	if month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
	if t.Day() != day { // 31 April and the like roll over
		return time.Time{}, false
	}
	return t, true
}

func digits2(b []byte) (int, bool) {
	if b[0] < '0' || b[0] > '9' || b[1] < '0' || b[1] > '9' {
		return 0, false
	}
	return int(b[0]-'0')*10 + int(b[1]-'0'), true
}
