package httptoken

import (
	"strings"
	"testing"
)

// TestValid checks Valid for every byte against RFC 9110's tchar.
func TestValid(t *testing.T) {
	for c := 0; c < 256; c++ {
		want := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c < 0x80 && strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c))
		if got := Valid("X-" + string([]byte{byte(c)})); got != want {
			t.Errorf("Valid(%q) = %v; want %v", "X-"+string([]byte{byte(c)}), got, want)
		}
	}
	if Valid("") {
		t.Error(`Valid("") = true; want false`)
	}
}
