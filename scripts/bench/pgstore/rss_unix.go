//go:build unix

package main

import (
	"os"
	"syscall"
)

// maxRSSKiB is the peak resident set of an ended process, in KiB (as
// Linux's getrusage reports it).
func maxRSSKiB(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Maxrss)
	}
	return 0
}
