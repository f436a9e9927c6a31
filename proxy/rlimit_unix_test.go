//go:build unix

package proxy

import (
	"syscall"
	"testing"
)

// raiseFileLimit makes room for n more open files, or skips the test.
func raiseFileLimit(t *testing.T, n uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	want := n + 256
	if uint64(lim.Cur) >= want {
		return
	}
	old := lim
	if uint64(lim.Max) < want {
		t.Skipf("needs %d open files; the limit is %d", want, lim.Max)
	}
	setLimit(&lim.Cur, want)
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		t.Skipf("needs %d open files; the limit is %d", want, lim.Max)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}

// setLimit sets an Rlimit field, int64 on FreeBSD and uint64 elsewhere.
func setLimit[T int64 | uint64](field *T, v uint64) { *field = T(v) }
