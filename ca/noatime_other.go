//go:build !linux

package ca

// oNoAtime is O_NOATIME where the system has it (see noatime_linux.go).
const oNoAtime = 0
