package revoke

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"time"
)

// appendEntry validates e and appends its revokedCertificates element:
//
//	SEQUENCE { userCertificate INTEGER, revocationDate Time,
//	           crlEntryExtensions SEQUENCE OF Extension OPTIONAL }
//
// Every part has a bounded size, so the element always fits a short-form
// length. i is the entry's position, used when it has no serial to name.
func appendEntry(out []byte, e Entry, thisUpdate time.Time, buf []byte, seen *serialSet, i int) ([]byte, error) {
	if e.Serial == nil {
		return out, fmt.Errorf("entry %d has no serial number", i)
	}
	if e.Serial.Sign() <= 0 {
		return out, fmt.Errorf("serial %x is not positive", e.Serial)
	}
	serial, ok := positiveIntBytes(e.Serial, buf)
	if !ok {
		return out, fmt.Errorf("serial %x is longer than 20 octets", e.Serial)
	}
	if e.RevokedAt.IsZero() {
		return out, fmt.Errorf("serial %x has no revocation time", e.Serial)
	}
	if e.RevokedAt.Truncate(time.Second).After(thisUpdate.Truncate(time.Second)) {
		return out, fmt.Errorf("serial %x revoked at %s, after this update %s", e.Serial,
			e.RevokedAt.UTC().Format(time.RFC3339), thisUpdate.UTC().Format(time.RFC3339))
	}
	if !e.Reason.Valid() {
		return out, fmt.Errorf("serial %x has invalid reason code %d", e.Serial, int(e.Reason))
	}
	if e.Reason == RemoveFromCRL {
		return out, fmt.Errorf("serial %x: reason removeFromCRL is only valid in delta CRLs", e.Serial)
	}

	start := len(out)
	out = append(out, tagSequence, 0, tagInteger, byte(len(serial)))
	serialAt := len(out)
	out = append(out, serial...)
	out, err := appendTime(out, e.RevokedAt)
	if err != nil {
		return out[:start], fmt.Errorf("serial %x revocation time: %w", e.Serial, err)
	}
	if e.Reason != Unspecified {
		out = append(out, tagSequence, 12, tagSequence, 10, tagOID, 3)
		out = append(out, oidReasonCode...)
		out = append(out, tagOctetString, 3, tagEnumerated, 1, byte(e.Reason))
	}
	out[start+1] = byte(len(out) - start - 2)
	if len(out) > math.MaxUint32 {
		return out[:start], errTooLarge
	}
	if !seen.add(out, serialAt) {
		return out[:start], fmt.Errorf("serial %x listed twice", e.Serial)
	}
	return out, nil
}

// serialSet detects repeated serials while Build streams. It is an
// open-addressing hash table of offsets into the output buffer, where each
// offset points at a serial's content octets and the octet before it holds
// their length: four bytes per entry instead of a copy of each serial.
type serialSet struct {
	seed  maphash.Seed
	slots []uint32 // 0 marks an empty slot; offsets are never 0
	n     int
}

func newSerialSet() serialSet {
	return serialSet{seed: maphash.MakeSeed(), slots: make([]uint32, 1024)}
}

var errTooLarge = errors.New("CRL larger than 4 GiB")

// add records the serial at buf[off] and reports false if it was already
// there.
func (s *serialSet) add(buf []byte, off int) bool {
	if (s.n+1)*2 > len(s.slots) {
		s.grow(buf)
	}
	if s.insert(buf, uint32(off)) {
		s.n++
		return true
	}
	return false
}

func (s *serialSet) insert(buf []byte, off uint32) bool {
	key := serialAt(buf, off)
	mask := uint64(len(s.slots) - 1)
	for i := maphash.Bytes(s.seed, key) & mask; ; i = (i + 1) & mask {
		switch o := s.slots[i]; {
		case o == 0:
			s.slots[i] = off
			return true
		case bytes.Equal(serialAt(buf, o), key):
			return false
		}
	}
}

func (s *serialSet) grow(buf []byte) {
	old := s.slots
	s.slots = make([]uint32, 2*len(old))
	for _, o := range old {
		if o != 0 {
			s.insert(buf, o)
		}
	}
}

func serialAt(buf []byte, off uint32) []byte {
	return buf[off : off+uint32(buf[off-1])]
}
