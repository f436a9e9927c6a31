package store

import (
	"crypto/rand"
	"encoding/base64"
)

// NonceSerials is how many nonces NewNonce makes before their serials,
// their first three characters, repeat.
const NonceSerials = 1 << 18

// NewNonce returns a new nonce (IsNonce): 18 bytes, base64url (RFC 8555
// section 6.5.1 wants the encoding of an octet string: clients such as
// certbot decode it), whose first 18 bits, its first three characters,
// are serial n modulo NonceSerials, and whose other 126 are random. A
// server that numbers its nonces in turn lets an engine keep each in a
// place of its own until NonceSerials later ones (the file engine's
// table of slots, see NonceSerial); the random bits keep it unguessable.
func NewNonce(n uint32) string {
	var b [18]byte
	rand.Read(b[:])
	n %= NonceSerials
	b[0] = byte(n >> 10)
	b[1] = byte(n >> 2)
	b[2] = byte(n<<6) | b[2]&0x3f
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// NonceSerial returns the serial of a nonce (IsNonce) that NewNonce
// made: the first 18 bits of the bytes its first four characters encode.
// It is below NonceSerials for any string, 0 for one that is no nonce.
func NonceSerial(nonce string) uint32 {
	var b [3]byte
	if len(nonce) < 4 {
		return 0
	}
	if _, err := base64.RawURLEncoding.Decode(b[:], []byte(nonce[:4])); err != nil {
		return 0
	}
	return uint32(b[0])<<10 | uint32(b[1])<<2 | uint32(b[2])>>6
}
