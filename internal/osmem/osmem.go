// Package osmem gives the memory of a large input back to the operating
// system once its user has let go of it. A long-running process that reads
// a CRL of a million entries (about 50 MB of DER) at every revocation
// would otherwise keep the pages of the last reload's transient arrays:
// the Go runtime returns freed memory to the system only gradually, and a
// heap grown by a reload is collected against a goal set by it.
package osmem

import (
	"runtime/debug"
	"time"
)

// Large is the size from which Release returns memory to the system: a
// CRL of about 20,000 entries, whose parse takes ten times as long as the
// collection; smaller reloads cost no collection of their own. Above it a
// proxy's RSS stays where the CRL in use puts it (at 10^5 entries, 8 MiB
// was too high: the proxy grew by a third over twenty reloads).
const Large = 1 << 20

// Release collects garbage and returns the freed memory to the system
// (debug.FreeOSMemory) when size, the bytes just let go of, is at least
// Large; else it does nothing. The caller must hold no reference to those
// bytes any more. It blocks for one collection, which is short for heaps
// that hold large pointer-free arrays (the parsed CRL), and is meant for
// the goroutine of a reload, never a request.
func Release(size int) {
	if size >= Large {
		debug.FreeOSMemory()
	}
}

// ReleaseLater is Release, d from now, for bytes whose last holders let
// go of them shortly after the caller: serve's long polls, woken by a new
// CRL, hold the one it replaced until they run.
func ReleaseLater(size int, d time.Duration) {
	if size >= Large {
		time.AfterFunc(d, func() { Release(size) })
	}
}
