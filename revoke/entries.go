package revoke

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"time"
)

// entryBuffer holds encoded entries in chunks, so that growing it never
// copies what is already written.
type entryBuffer struct {
	chunks [][]byte
	size   int
}

const (
	chunkBits  = 20 // chunk offsets fit in the low bits of a position
	firstChunk = 32 << 10
	maxEntry   = 64 // 2 + 22 serial + 17 time + 14 reason code, rounded up
)

var errTooLarge = errors.New("CRL larger than 4 GiB")

// serial returns the serial content octets at pos, a chunk index and offset
// packed by appendEntry; the octet before them holds their length.
func (b *entryBuffer) serial(pos uint32) []byte {
	c := b.chunks[pos>>chunkBits]
	off := pos & (1<<chunkBits - 1)
	return c[off : off+uint32(c[off-1])]
}

// appendEntry validates e and appends its revokedCertificates element:
//
//	SEQUENCE { userCertificate INTEGER, revocationDate Time,
//	           crlEntryExtensions SEQUENCE OF Extension OPTIONAL }
//
// removeFromCRL is refused unless delta.
// Every part has a bounded size, so the element always fits a short-form
// length. i is the entry's position, used when it has no serial to name.
func (b *entryBuffer) appendEntry(e Entry, thisUpdate time.Time, delta bool, buf []byte, seen *serialSet, i int) error {
	if e.Serial == nil {
		return fmt.Errorf("entry %d has no serial number", i)
	}
	if e.Serial.Sign() <= 0 {
		return fmt.Errorf("serial %x is not positive", e.Serial)
	}
	serial, ok := positiveIntBytes(e.Serial, buf)
	if !ok {
		return fmt.Errorf("serial %x is longer than 20 octets", e.Serial)
	}
	if e.RevokedAt.IsZero() {
		return fmt.Errorf("serial %x has no revocation time", e.Serial)
	}
	if e.RevokedAt.Truncate(time.Second).After(thisUpdate.Truncate(time.Second)) {
		return fmt.Errorf("serial %x revoked at %s, after this update %s", e.Serial,
			e.RevokedAt.UTC().Format(time.RFC3339), thisUpdate.UTC().Format(time.RFC3339))
	}
	if !e.Reason.Valid() {
		return fmt.Errorf("serial %x has invalid reason code %d", e.Serial, int(e.Reason))
	}
	if e.Reason == RemoveFromCRL && !delta {
		return fmt.Errorf("serial %x: reason removeFromCRL is only valid in delta CRLs", e.Serial)
	}

	if n := len(b.chunks); n == 0 || cap(b.chunks[n-1])-len(b.chunks[n-1]) < maxEntry {
		if n >= 1<<(32-chunkBits) {
			return errTooLarge
		}
		size := 1 << chunkBits
		if n < chunkBits-15 { // small CRLs start with small chunks
			size = firstChunk << n
		}
		b.chunks = append(b.chunks, make([]byte, 0, size))
	}
	idx := len(b.chunks) - 1
	out := b.chunks[idx]
	start := len(out)
	out = append(out, tagSequence, 0, tagInteger, byte(len(serial)))
	pos := uint32(idx)<<chunkBits | uint32(len(out))
	out = append(out, serial...)
	out, err := appendTime(out, e.RevokedAt)
	if err != nil {
		return fmt.Errorf("serial %x revocation time: %w", e.Serial, err)
	}
	if e.Reason != Unspecified {
		out = append(out, tagSequence, 12, tagSequence, 10, tagOID, 3)
		out = append(out, oidReasonCode...)
		out = append(out, tagOctetString, 3, tagEnumerated, 1, byte(e.Reason))
	}
	out[start+1] = byte(len(out) - start - 2)
	b.chunks[idx] = out
	if !seen.add(b, pos) {
		b.chunks[idx] = out[:start]
		return fmt.Errorf("serial %x listed twice", e.Serial)
	}
	b.size += len(out) - start
	return nil
}

// serialSet detects repeated serials while Build streams. It is an
// open-addressing hash table of positions in the entryBuffer: four bytes per
// entry instead of a copy of each serial.
type serialSet struct {
	seed  maphash.Seed
	slots []uint32 // 0 marks an empty slot; offsets are never 0
	n     int
}

// newSerialSet returns a set sized for about n serials.
func newSerialSet(n int) serialSet {
	size := 1024
	for size < 2*n && size < 1<<28 {
		size *= 2
	}
	return serialSet{seed: maphash.MakeSeed(), slots: make([]uint32, size)}
}

// add records the serial at pos and reports false if it was already there.
func (s *serialSet) add(buf *entryBuffer, pos uint32) bool {
	if (s.n+1)*2 > len(s.slots) {
		s.grow(buf)
	}
	if s.insert(buf, pos) {
		s.n++
		return true
	}
	return false
}

func (s *serialSet) insert(buf *entryBuffer, pos uint32) bool {
	key := buf.serial(pos)
	mask := uint64(len(s.slots) - 1)
	for i := maphash.Bytes(s.seed, key) & mask; ; i = (i + 1) & mask {
		switch o := s.slots[i]; {
		case o == 0:
			s.slots[i] = pos
			return true
		case bytes.Equal(buf.serial(o), key):
			return false
		}
	}
}

func (s *serialSet) grow(buf *entryBuffer) {
	old := s.slots
	s.slots = make([]uint32, 2*len(old))
	for _, o := range old {
		if o != 0 {
			s.insert(buf, o)
		}
	}
}
