//go:build unix

package proxy

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// canCheckIdle says whether idleClean works here.
const canCheckIdle = true

// idleClean reports whether c, an idle connection to the upstream, is
// still open and has received nothing: a byte that arrives while nobody
// asked is not the answer to the next request (net/http's Transport closes
// such a connection too). It peeks without waiting, one system call.
func idleClean(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	clean := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		// Nothing to read (EAGAIN) is the clean case; 0 bytes is EOF.
		clean = n <= 0 && (err == unix.EAGAIN || err == unix.EWOULDBLOCK)
		return true
	})
	return err == nil && clean
}
