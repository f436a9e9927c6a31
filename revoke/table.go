package revoke

import (
	"bytes"
	"encoding/binary"
	"math/big"
	"sort"
	"time"
)

// serialTable is the parsed set of revoked serials: one flat byte array of
// fixed-width records sorted by serial, searched by bisection.
//
// A record is the serial's DER content octets, sign-extended to the width
// of the longest serial in the CRL, then the revocation time in Unix seconds
// (8 octets, big-endian) and the reason code (1 octet). Serials of a CA that
// uses 128-bit serials take 26 bytes a record against about 50 in the DER.
type serialTable struct {
	width int // serial octets per record
	data  []byte
}

const recordTail = 9 // time and reason after the serial

func (s *serialTable) recSize() int { return s.width + recordTail }

func (s *serialTable) len() int {
	if s.width == 0 {
		return 0
	}
	return len(s.data) / s.recSize()
}

// set writes record i.
func (s *serialTable) set(i int, serial []byte, at time.Time, r Reason) {
	rec := s.data[i*s.recSize() : (i+1)*s.recSize()]
	pad := s.width - len(serial)
	fill := byte(0)
	if serial[0]&0x80 != 0 {
		fill = 0xff
	}
	for j := range pad {
		rec[j] = fill
	}
	copy(rec[pad:s.width], serial)
	binary.BigEndian.PutUint64(rec[s.width:], uint64(at.Unix()))
	rec[s.width+8] = byte(r)
}

// sortAndCheck sorts the records and reports the index of a serial listed
// twice, or -1.
func (s *serialTable) sortAndCheck() int {
	sorted := true
	for i := 1; i < s.len(); i++ {
		if bytes.Compare(s.key(i-1), s.key(i)) >= 0 {
			sorted = false
			break
		}
	}
	if !sorted {
		sort.Sort(recordSorter{s, make([]byte, s.recSize())})
	}
	for i := 1; i < s.len(); i++ {
		if bytes.Equal(s.key(i-1), s.key(i)) {
			return i
		}
	}
	return -1
}

func (s *serialTable) key(i int) []byte {
	off := i * s.recSize()
	return s.data[off : off+s.width]
}

// find returns the index of the record for serial, or -1.
func (s *serialTable) find(serial *big.Int) int {
	var buf [64]byte
	key, ok := s.encode(serial, buf[:])
	if !ok {
		return -1
	}
	lo, hi := 0, s.len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch c := bytes.Compare(s.key(mid), key); {
		case c == 0:
			return mid
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return -1
}

// encode writes serial in two's complement, sign-extended to s.width octets,
// and reports false when it needs more octets (so it cannot be listed).
func (s *serialTable) encode(serial *big.Int, buf []byte) ([]byte, bool) {
	if s.width == 0 || s.width > len(buf) || serial == nil {
		return nil, false
	}
	key := buf[:s.width]
	if serial.Sign() >= 0 {
		if serial.BitLen() > 8*s.width-1 {
			return nil, false
		}
		return serial.FillBytes(key), true
	}
	// Negative serials are malformed under RFC 5280 but occur in old CRLs.
	mod := new(big.Int).Lsh(big.NewInt(1), uint(8*s.width))
	twos := new(big.Int).Add(mod, serial)
	if twos.Sign() <= 0 || twos.BitLen() != 8*s.width { // below -2^(8w-1)
		return nil, false
	}
	return twos.FillBytes(key), true
}

// entry returns record i as an Entry with the given serial, which it keeps.
func (s *serialTable) entry(i int, serial *big.Int) Entry {
	rec := s.data[i*s.recSize() : (i+1)*s.recSize()]
	at := int64(binary.BigEndian.Uint64(rec[s.width:]))
	return Entry{
		Serial:    serial,
		RevokedAt: time.Unix(at, 0).UTC(),
		Reason:    Reason(rec[s.width+8]),
	}
}

// serial returns the serial of record i.
func (s *serialTable) serial(i int) *big.Int {
	key := s.key(i)
	n := new(big.Int).SetBytes(key)
	if key[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(key))))
	}
	return n
}

type recordSorter struct {
	s   *serialTable
	tmp []byte
}

func (r recordSorter) Len() int           { return r.s.len() }
func (r recordSorter) Less(i, j int) bool { return bytes.Compare(r.s.key(i), r.s.key(j)) < 0 }
func (r recordSorter) Swap(i, j int) {
	n := r.s.recSize()
	a, b := r.s.data[i*n:(i+1)*n], r.s.data[j*n:(j+1)*n]
	copy(r.tmp, a)
	copy(a, b)
	copy(b, r.tmp)
}
