//go:build unix && !(linux && (amd64 || arm64))

package proxy

import "golang.org/x/sys/unix"

// peek reads into b from socket fd without taking the bytes and without
// waiting (MSG_PEEK, MSG_DONTWAIT).
func peek(fd int, b []byte) (int, error) {
	n, _, err := unix.Recvfrom(fd, b, unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return n, err
}
