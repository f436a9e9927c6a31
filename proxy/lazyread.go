package proxy

import (
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// lazyRead is the read side of a connection whose read deadline is moved
// on the socket only when it must be. The deadline in force is never
// later than the one asked for, so no read waits longer than it was told;
// it may be earlier: when a later deadline, or none, is asked for, the one
// in force stays, and a read it ends too soon is retried under the
// deadline asked for. Each move is a timer update in the runtime; on a
// keep-alive request net/http's server asks for six (header, body,
// background read and its abort, idle) and the short way upstream for two,
// of which about two reach the socket this way (docs/performance.md,
// "Proxy").
//
// Reads must not overlap one another (net/http, crypto/tls and bufio read
// one at a time); SetReadDeadline may be called from any goroutine, and
// one that comes during a read and is earlier than the deadline in force
// applies at once.
type lazyRead struct {
	conn    net.Conn
	mu      sync.Mutex
	want    time.Time // asked for; zero: none
	set     time.Time // in force on conn; zero: none
	reading bool
}

// earlier reports whether deadline a comes before b, the zero time being
// no deadline.
func earlier(a, b time.Time) bool { return !a.IsZero() && (b.IsZero() || a.Before(b)) }

// passed reports whether deadline d has come, at the time of the call.
func passed(d time.Time) bool { return !d.IsZero() && !time.Now().Before(d) }

func (l *lazyRead) SetReadDeadline(t time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.want = t
	if l.reading && earlier(t, l.set) {
		return l.applyLocked(t)
	}
	return nil
}

func (l *lazyRead) applyLocked(t time.Time) error {
	l.set = t
	return l.conn.SetReadDeadline(t)
}

func (l *lazyRead) Read(b []byte) (int, error) {
	for {
		l.mu.Lock()
		if earlier(l.want, l.set) {
			l.applyLocked(l.want)
		}
		l.reading = true
		l.mu.Unlock()
		n, err := l.conn.Read(b)
		l.mu.Lock()
		l.reading = false
		early := n == 0 && errors.Is(err, os.ErrDeadlineExceeded) && !passed(l.want)
		if early {
			l.applyLocked(l.want)
		}
		l.mu.Unlock()
		if !early {
			return n, err
		}
	}
}

// settle puts the deadline asked for in force on the socket, for a reader
// that reads the socket itself (see idleClean).
func (l *lazyRead) settle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.applyLocked(l.want)
}

// lazyConn is a connection whose reads go through lazyRead; its writes
// and write deadlines are the connection's own.
type lazyConn struct {
	net.Conn
	lr lazyRead
}

func newLazyConn(c net.Conn) *lazyConn {
	lc := &lazyConn{Conn: c}
	lc.lr.conn = c
	return lc
}

func (c *lazyConn) Read(b []byte) (int, error)        { return c.lr.Read(b) }
func (c *lazyConn) SetReadDeadline(t time.Time) error { return c.lr.SetReadDeadline(t) }

func (c *lazyConn) SetDeadline(t time.Time) error {
	c.lr.SetReadDeadline(t)
	return c.Conn.SetWriteDeadline(t)
}
