package file

import (
	"testing"

	"golang.org/x/sys/unix"
)

// event is one raw inotify event for wd naming name.
func event(wd int32, mask uint32, name string) []byte {
	pad := (len(name) + 1 + 15) / 16 * 16 // NUL-terminated, padded as the kernel does
	b := make([]byte, unix.SizeofInotifyEvent+pad)
	le := func(off int, v uint32) {
		b[off], b[off+1], b[off+2], b[off+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	le(0, uint32(wd))
	le(4, mask)
	le(12, uint32(pad))
	copy(b[unix.SizeofInotifyEvent:], name)
	return b
}

func TestConcerns(t *testing.T) {
	watched := map[int32][]string{1: {"crl.der", "crl-delta.der"}, 2: {"revoked.log"}}
	join := func(evs ...[]byte) []byte {
		var b []byte
		for _, e := range evs {
			b = append(b, e...)
		}
		return b
	}
	tests := []struct {
		name string
		buf  []byte
		want bool
	}{
		{"crl.der moved into place", event(1, unix.IN_MOVED_TO, "crl.der"), true},
		{"crl-delta.der moved into place", event(1, unix.IN_MOVED_TO, "crl-delta.der"), true},
		{"the revocation log appended", event(2, unix.IN_MODIFY, "revoked.log"), true},
		{"crl.pem", event(1, unix.IN_MOVED_TO, "crl.pem"), false},
		{"crl-delta.pem", event(1, unix.IN_MOVED_TO, "crl-delta.pem"), false},
		{"crl.der's temporary file", event(1, unix.IN_CLOSE_WRITE, ".crl.der.tmp123"), false},
		{"a name of the other directory", event(2, unix.IN_MOVED_TO, "crl.der"), false},
		{"the second of two", join(event(1, unix.IN_CLOSE_WRITE, "serial"), event(2, unix.IN_MODIFY, "revoked.log")), true},
		{"queue overflow", event(-1, unix.IN_Q_OVERFLOW, ""), true},
		{"cut short", event(1, unix.IN_MOVED_TO, "crl.der")[:unix.SizeofInotifyEvent+2], false},
		{"nothing", nil, false},
	}
	for _, tt := range tests {
		if got := concerns(tt.buf, watched); got != tt.want {
			t.Errorf("%s: concerns() = %v; want %v", tt.name, got, tt.want)
		}
	}
}
