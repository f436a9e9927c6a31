//go:build !unix

package proxy

import "testing"

// raiseFileLimit skips the test: only Unix systems have RLIMIT_NOFILE.
func raiseFileLimit(t *testing.T, n uint64) {
	t.Skipf("needs %d open files: raising the limit needs a Unix system", n+256)
}
