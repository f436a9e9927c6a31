package h1direct

import (
	"strings"
	"testing"
)

// TestValidFieldValue checks the word-at-a-time ValidFieldValue against
// the byte-at-a-time rule, for every byte value at every position of a
// word and in the tail.
func TestValidFieldValue(t *testing.T) {
	for n := 0; n <= 35; n++ {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := []byte(strings.Repeat("a", n))
				b[pos] = byte(c)
				v := string(b)
				want := !(c < ' ' && c != '\t' || c == 0x7f)
				if got := ValidFieldValue(v); got != want {
					t.Fatalf("ValidFieldValue(%q) = %v; want %v", v, got, want)
				}
			}
		}
	}
	for _, tt := range []struct {
		v    string
		want bool
	}{
		{"", true},
		{"\t\t\t\t\t\t\t\t\x80\xff", true},
		{strings.Repeat("MIIB%2F", 200), true},
		{strings.Repeat("x", 1200) + "\r\n", false},
		{strings.Repeat("\x1f", 8), false},
		{"\x7e\x7e\x7e\x7e\x7e\x7e\x7e\x7f", false},
	} {
		if got := ValidFieldValue(tt.v); got != tt.want {
			t.Errorf("ValidFieldValue(%.20q…) = %v; want %v", tt.v, got, tt.want)
		}
	}
}

// FuzzValidFieldValue compares ValidFieldValue with the byte-at-a-time
// rule.
func FuzzValidFieldValue(f *testing.F) {
	f.Add("abc\tdef")
	f.Add("0123456789abcdef\x7f")
	f.Fuzz(func(t *testing.T, v string) {
		if got, want := ValidFieldValue(v), validFieldBytes(v); got != want {
			t.Fatalf("ValidFieldValue(%q) = %v; want %v", v, got, want)
		}
	})
}

func BenchmarkValidFieldValue(b *testing.B) {
	v := strings.Repeat("MIIB%2FzCCAaWgAwIBAgIQ", 55) // about the escaped certificate
	for b.Loop() {
		if !ValidFieldValue(v) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkValidFieldBytes(b *testing.B) {
	v := strings.Repeat("MIIB%2FzCCAaWgAwIBAgIQ", 55)
	for b.Loop() {
		if !validFieldBytes(v) {
			b.Fatal("invalid")
		}
	}
}
