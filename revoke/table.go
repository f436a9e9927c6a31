package revoke

import (
	"bytes"
	"encoding/binary"
	"math/big"
	"math/bits"
	"slices"
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
	// index[b] is the first record whose leading bits (see bucket) are at
	// least b, so bisection starts in a range of about eight records. It
	// costs half a byte per record.
	index []uint32
	bits  uint
	// shift is how many leading bits all keys share (the sign octet, for
	// one); buckets use the bits after them.
	shift uint
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

// sortAndCheck sorts the records, builds the index, and reports the index
// of a serial listed twice, or -1.
func (s *serialTable) sortAndCheck() int {
	s.chooseBits()
	sorted := true
	for i := 1; i < s.len(); i++ {
		if bytes.Compare(s.key(i-1), s.key(i)) >= 0 {
			sorted = false
			break
		}
	}
	if !sorted {
		s.bucketSort()
	}
	for i := 1; i < s.len(); i++ {
		if bytes.Equal(s.key(i-1), s.key(i)) {
			return i
		}
	}
	s.buildIndex()
	return -1
}

// bucketSort moves the records to their buckets in place (an American
// flag sort: counts, then cycles of swaps, linear in n, with no second
// array the size of the table, which would raise the peak memory of a
// reload by a third) and then sorts each bucket, which holds about eight
// records when serials are random as RFC 5280 asks.
func (s *serialTable) bucketSort() {
	n := s.len()
	counts := make([]int, 1<<s.bits+1)
	for i := range n {
		counts[s.bucket(s.key(i))+1]++
	}
	for b := 1; b < len(counts); b++ {
		counts[b] += counts[b-1]
	}
	r := recordSorter{s: s, tmp: make([]byte, s.recSize()), n: n}
	// next[b] is the first record of bucket b's range not yet known to
	// belong there; each swap puts one record in its bucket for good.
	next := slices.Clone(counts[:len(counts)-1])
	for b := range next {
		for next[b] < counts[b+1] {
			d := s.bucket(s.key(next[b]))
			if d != uint32(b) {
				r.Swap(next[b], next[d])
			}
			next[d]++
		}
	}
	for b := 0; b+1 < len(counts); b++ {
		r := recordSorter{s: s, tmp: r.tmp, off: counts[b], n: counts[b+1] - counts[b]}
		if r.n <= 32 {
			r.insertionSort()
		} else {
			sort.Sort(r)
		}
	}
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
	if s.index != nil {
		b := s.bucket(key)
		lo, hi = int(s.index[b]), int(s.index[b+1])
	}
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

// bucket returns the s.bits bits of key that follow the s.shift bits all
// keys share. Records are sorted by key, so their buckets never decrease.
// A key that does not share the prefix (a lookup of an unlisted serial) is
// in no bucket; it gets one that bisection will not find it in.
func (s *serialTable) bucket(key []byte) uint32 {
	if s.bits == 0 {
		return 0
	}
	var p [8]byte
	copy(p[:], key[s.shift/8:])
	return uint32(binary.BigEndian.Uint64(p[:]) << (s.shift % 8) >> (64 - s.bits))
}

// chooseBits sizes the index: one bucket per eight records or so, at most
// 2^16 buckets, a single one for small tables.
func (s *serialTable) chooseBits() {
	s.bits, s.shift = 0, 0
	for s.bits < 16 && s.len()>>(s.bits+4) > 0 {
		s.bits++
	}
	if s.bits == 0 {
		return
	}
	lo, hi := s.key(0), s.key(0)
	for i := 1; i < s.len(); i++ {
		k := s.key(i)
		if bytes.Compare(k, lo) < 0 {
			lo = k
		} else if bytes.Compare(k, hi) > 0 {
			hi = k
		}
	}
	for j := range lo {
		if lo[j] != hi[j] {
			s.shift = uint(8*j + bits.LeadingZeros8(lo[j]^hi[j]))
			return
		}
	}
}

// buildIndex fills s.index for sorted records; small tables get none.
func (s *serialTable) buildIndex() {
	n := s.len()
	if s.bits == 0 {
		s.index = nil
		return
	}
	s.index = make([]uint32, 1<<s.bits+1)
	i := 0
	for b := range s.index {
		for i < n && s.bucket(s.key(i)) < uint32(b) {
			i++
		}
		s.index[b] = uint32(i)
	}
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

// reason returns the reason of record i.
func (s *serialTable) reason(i int) Reason { return Reason(s.data[(i+1)*s.recSize()-1]) }

// serial returns the serial of record i.
func (s *serialTable) serial(i int) *big.Int {
	key := s.key(i)
	n := new(big.Int).SetBytes(key)
	if key[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(key))))
	}
	return n
}

// recordSorter sorts the n records starting at record off.
type recordSorter struct {
	s      *serialTable
	tmp    []byte
	off, n int
}

func (r recordSorter) Len() int { return r.n }
func (r recordSorter) Less(i, j int) bool {
	return bytes.Compare(r.s.key(r.off+i), r.s.key(r.off+j)) < 0
}
func (r recordSorter) Swap(i, j int) {
	n := r.s.recSize()
	i, j = r.off+i, r.off+j
	a, b := r.s.data[i*n:(i+1)*n], r.s.data[j*n:(j+1)*n]
	copy(r.tmp, a)
	copy(a, b)
	copy(b, r.tmp)
}

func (r recordSorter) insertionSort() {
	for i := 1; i < r.n; i++ {
		for j := i; j > 0 && r.Less(j, j-1); j-- {
			r.Swap(j, j-1)
		}
	}
}
