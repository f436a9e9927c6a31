//go:build unix

package proxy

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitWritable waits, until c's write deadline, for the system to report
// c writable (poll(2) POLLOUT): for a TCP socket Linux does so once a
// third of its send buffer is free, so a write that goes on then goes on
// because the client took a good part of what it was sent. It returns nil
// when c is writable, or when it cannot tell (the write then tries at
// once), and the deadline's error when it passed.
func waitWritable(c net.Conn) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc.Write(writable)
}

// writable reports whether socket fd is writable now, as RawConn.Write
// asks it: false waits for the next readiness, or the deadline.
func writable(fd uintptr) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	n, err := unix.Poll(fds, 0)
	return err != nil || n > 0 // on an error, the write finds out what it is
}
