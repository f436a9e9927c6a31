//go:build linux && (amd64 || arm64)

package proxy

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// peek reads into b from socket fd without taking the bytes and without
// waiting (MSG_PEEK, MSG_DONTWAIT). It is recvfrom(2) without the source
// address, which unix.Recvfrom allocates on every call.
func peek(fd int, b []byte) (int, error) {
	n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(n), nil
}
