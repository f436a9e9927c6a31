package store

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
)

// NonceSerials is how many nonces NewNonce makes before their serials,
// their first three characters, repeat.
const NonceSerials = 1 << 18

// b64url is the alphabet of base64url (RFC 4648 section 5).
const b64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

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
// made, read from its first three characters: below NonceSerials, for
// any nonce.
func NonceSerial(nonce string) uint32 {
	var n uint32
	for i := range min(3, len(nonce)) {
		n = n<<6 | uint32(max(strings.IndexByte(b64url, nonce[i]), 0))
	}
	return n
}
