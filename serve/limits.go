package serve

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// limitListener keeps at most max connections open. When a new one comes
// and all are taken, the oldest connection that is not in a request (one
// still sending its headers, or idle between requests) is closed to make
// room; only when every connection is in a request is the new one closed
// instead. So clients that open connections and trickle headers (slowloris)
// hold no slot against a client that sends a request: each new client
// evicts the oldest of them. Long polls are in a request, and MaxWaiters
// keeps them from filling the slots.
type limitListener struct {
	net.Listener
	max   int
	m     *metrics
	mu    sync.Mutex
	seq   uint64
	conns map[*trackedConn]struct{}
}

func newLimitListener(ln net.Listener, max int, m *metrics) *limitListener {
	return &limitListener{Listener: ln, max: max, m: m, conns: map[*trackedConn]struct{}{}}
}

// trackedConn is a connection of a limitListener; busy counts its
// requests being handled.
type trackedConn struct {
	net.Conn
	l    *limitListener
	seq  uint64
	busy atomic.Int32
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.l.remove(c) })
	return c.Conn.Close()
}

func (l *limitListener) remove(c *trackedConn) {
	l.mu.Lock()
	if _, ok := l.conns[c]; ok {
		delete(l.conns, c)
		l.m.conns.Add(-1)
	}
	l.mu.Unlock()
}

// Accept returns the next connection, making room for it as the type's
// comment says.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		var victim *trackedConn
		if len(l.conns) >= l.max {
			for c := range l.conns {
				if c.busy.Load() == 0 && (victim == nil || c.seq < victim.seq) {
					victim = c
				}
			}
			if victim == nil {
				l.mu.Unlock()
				conn.Close()
				l.m.connsRefused.Add(1)
				continue
			}
			delete(l.conns, victim)
			l.m.conns.Add(-1)
		}
		l.seq++
		tc := &trackedConn{Conn: conn, l: l, seq: l.seq}
		l.conns[tc] = struct{}{}
		l.m.conns.Add(1)
		l.mu.Unlock()
		if victim != nil {
			victim.Close()
			l.m.connsEvicted.Add(1)
		}
		return tc, nil
	}
}

type connKey struct{}

// connContext puts the trackedConn under c into the context of its
// requests (http.Server.ConnContext).
func (l *limitListener) connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if t, ok := c.(*trackedConn); ok {
		return context.WithValue(ctx, connKey{}, t)
	}
	return ctx
}

// track marks the connection busy while h handles a request, and bounds
// the reading of a request body (OCSP POST) by readTimeout.
func (l *limitListener) track(h http.Handler, readTimeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, ok := r.Context().Value(connKey{}).(*trackedConn)
		if ok {
			t.busy.Add(1)
			defer t.busy.Add(-1)
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if ok { // what the ResponseController does, without making one
				t.Conn.SetReadDeadline(time.Now().Add(readTimeout))
			} else {
				http.NewResponseController(w).SetReadDeadline(time.Now().Add(readTimeout))
			}
		}
		h.ServeHTTP(w, r)
	})
}
