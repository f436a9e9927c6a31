//go:build !linux

package cadir

// oNoAtime is O_NOATIME where the system has it (see noatime_linux.go).
const oNoAtime = 0
