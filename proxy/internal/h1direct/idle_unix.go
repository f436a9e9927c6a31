//go:build unix

package h1direct

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// canCheckIdle says whether idleClean works here.
const canCheckIdle = true

// idleCheck is the check of idleClean for one connection, made once when
// it is dialled, so that a check allocates no raw connection and no
// closure of its own.
type idleCheck struct {
	rc    syscall.RawConn // nil: the connection cannot be checked
	clean bool
	b     [1]byte
	peek  func(fd uintptr) bool
}

// newIdleCheck makes the check of c.
func newIdleCheck(c net.Conn) *idleCheck {
	ic := &idleCheck{}
	if sc, ok := c.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			ic.rc = rc
		}
	}
	ic.peek = func(fd uintptr) bool {
		n, _, err := unix.Recvfrom(int(fd), ic.b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		// Nothing to read (EAGAIN) is the clean case; 0 bytes is EOF.
		ic.clean = n <= 0 && (err == unix.EAGAIN || err == unix.EWOULDBLOCK)
		return true
	}
	return ic
}

// idleClean reports whether the connection of ic, an idle connection to
// the upstream, is still open and has received nothing: a byte that
// arrives while nobody asked is not the answer to the next request
// (net/http's Transport closes such a connection too). It peeks without
// waiting, one system call.
func (ic *idleCheck) idleClean() bool {
	if ic.rc == nil {
		return false
	}
	ic.clean = false
	err := ic.rc.Read(ic.peek)
	return err == nil && ic.clean
}
