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

// NewNonce returns a new nonce (IsNonce): serial n modulo NonceSerials
// in its first three characters, then 16 random bytes, all base64url.
// A server that numbers its nonces in turn lets an engine keep each in a
// place of its own until NonceSerials later ones (the file engine's
// table of slots, see NonceSerial); the random bytes keep it unguessable.
func NewNonce(n uint32) string {
	var sb strings.Builder
	sb.Grow(3 + 22)
	sb.WriteByte(b64url[n>>12&63])
	sb.WriteByte(b64url[n>>6&63])
	sb.WriteByte(b64url[n&63])
	var r [16]byte
	rand.Read(r[:])
	sb.WriteString(base64.RawURLEncoding.EncodeToString(r[:]))
	return sb.String()
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
