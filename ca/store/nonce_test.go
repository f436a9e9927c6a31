package store

import (
	"encoding/base64"
	"testing"
)

// TestNewNonce: a nonce holds its serial modulo NonceSerials, and two
// nonces of one serial differ.
func TestNewNonce(t *testing.T) {
	for _, n := range []uint32{0, 1, 63, 64, 4095, 4096, NonceSerials - 1, NonceSerials, NonceSerials + 7, 1<<32 - 1} {
		a, b := NewNonce(n), NewNonce(n)
		if raw, err := base64.RawURLEncoding.DecodeString(a); !IsNonce(a) || err != nil || len(raw) != 18 {
			t.Errorf("NewNonce(%d) = %q; want 18 bytes in base64url (%v)", n, a, err)
		}
		if got := NonceSerial(a); got != n%NonceSerials {
			t.Errorf("NonceSerial(NewNonce(%d)) = %d; want %d", n, got, n%NonceSerials)
		}
		if a == b {
			t.Errorf("NewNonce(%d) made %q twice", n, a)
		}
	}
	if NonceSerial(NewNonce(5)) == NonceSerial(NewNonce(6)) {
		t.Error("nonces of serials 5 and 6 have one serial")
	}
	for _, s := range []string{"", "A", "___", "~~~~~~~~~~~~~~~~"} {
		if got := NonceSerial(s); got >= NonceSerials {
			t.Errorf("NonceSerial(%q) = %d; want below %d", s, got, NonceSerials)
		}
	}
}
