package connlimit

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Counters are a listener's figures, for the metrics: the connections
// open, those closed to make room (Evicted) and those closed at once
// because every slot was in a request (Refused). Several listeners may
// share one.
type Counters struct {
	Open    atomic.Int64
	Evicted atomic.Uint64
	Refused atomic.Uint64
}

// Listener keeps at most max connections open (see the package doc).
type Listener struct {
	net.Listener
	max   int
	n     *Counters
	mu    sync.Mutex
	seq   uint64
	conns map[*Conn]struct{}
}

// NewListener bounds ln to max connections, counted in n.
func NewListener(ln net.Listener, max int, n *Counters) *Listener {
	return &Listener{Listener: ln, max: max, n: n, conns: map[*Conn]struct{}{}}
}

// Conn is a connection of a Listener.
type Conn struct {
	net.Conn
	l    *Listener
	seq  uint64
	busy atomic.Int32
	once sync.Once
}

// Begin marks a request on c in progress: c is not evicted until End.
func (c *Conn) Begin() { c.busy.Add(1) }

// End marks the request that Begin marked done.
func (c *Conn) End() { c.busy.Add(-1) }

// Close closes c and frees its slot.
func (c *Conn) Close() error {
	c.once.Do(func() { c.l.remove(c) })
	return c.Conn.Close()
}

func (l *Listener) remove(c *Conn) {
	l.mu.Lock()
	if _, ok := l.conns[c]; ok {
		delete(l.conns, c)
		l.n.Open.Add(-1)
	}
	l.mu.Unlock()
}

// Accept returns the next connection, a *Conn, making room for it as the
// package doc says.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		var victim *Conn
		if len(l.conns) >= l.max {
			for c := range l.conns {
				if c.busy.Load() == 0 && (victim == nil || c.seq < victim.seq) {
					victim = c
				}
			}
			if victim == nil {
				l.mu.Unlock()
				conn.Close()
				l.n.Refused.Add(1)
				continue
			}
			delete(l.conns, victim)
			l.n.Open.Add(-1)
		}
		l.seq++
		tc := &Conn{Conn: conn, l: l, seq: l.seq}
		l.conns[tc] = struct{}{}
		l.n.Open.Add(1)
		l.mu.Unlock()
		if victim != nil {
			victim.Close()
			l.n.Evicted.Add(1)
		}
		return tc, nil
	}
}

type connKey struct{}

// ConnContext puts the Conn under c into the context of its requests
// (http.Server.ConnContext).
func (l *Listener) ConnContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if t, ok := c.(*Conn); ok {
		return context.WithValue(ctx, connKey{}, t)
	}
	return ctx
}

// FromContext returns the Conn a request came on, when its server put it
// there with ConnContext.
func FromContext(ctx context.Context) (*Conn, bool) {
	t, ok := ctx.Value(connKey{}).(*Conn)
	return t, ok
}

// Track marks the connection in a request while h handles it, and bounds
// the reading of a request body by readTimeout: a request with a body (an
// OCSP POST) is read within it whatever its handler does.
func Track(h http.Handler, readTimeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, ok := FromContext(r.Context())
		if ok {
			t.Begin()
			defer t.End()
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
