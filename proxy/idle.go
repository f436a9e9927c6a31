package proxy

import (
	"net"
	"net/http"
	"sync"
)

// idleConns tracks the client connections served by http.Server with their
// state, so that a sweep can close the idle ones (keep-alive between
// requests, HTTP/2 without streams) of a client refused since: it would
// get 403 on its next request, but an idle connection of a revoked client
// should not stay open until then.
type idleConns struct {
	mu    sync.Mutex
	conns map[net.Conn]*idleConn
}

type idleConn struct {
	ci   *conn
	idle bool
}

func newIdleConns() *idleConns { return &idleConns{conns: map[net.Conn]*idleConn{}} }

// track registers c, served for ci; connContext calls it before the first
// ConnState of c.
func (ic *idleConns) track(c net.Conn, ci *conn) {
	ic.mu.Lock()
	ic.conns[c] = &idleConn{ci: ci}
	ic.mu.Unlock()
}

// connState is http.Server.ConnState: it follows c from idle to active
// and back, and forgets it once closed or hijacked.
func (ic *idleConns) connState(c net.Conn, s http.ConnState) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	t, ok := ic.conns[c]
	if !ok {
		return
	}
	switch s {
	case http.StateIdle:
		t.idle = true
	case http.StateActive:
		t.idle = false
	case http.StateClosed, http.StateHijacked:
		delete(ic.conns, c)
	}
}

// closeIdleRefused closes every idle connection whose client is refused now
// (see Proxy.current) for a reason of its own, and logs and counts each. The check runs without
// the lock; the connection is closed only if still idle then.
func (p *Proxy) closeIdleRefused() {
	ic := p.idle
	ic.mu.Lock()
	var idle []net.Conn
	for c, t := range ic.conns {
		if t.idle {
			idle = append(idle, c)
		}
	}
	ic.mu.Unlock()
	for _, c := range idle {
		ic.mu.Lock()
		t, ok := ic.conns[c]
		ic.mu.Unlock()
		if !ok {
			continue
		}
		id, _, _, refused := p.current(t.ci)
		// While the CRL itself is unusable every client is refused; their
		// connections stay, to get 503 with the reason and to work again
		// once a fresh CRL comes.
		if refused == "" || refused == ReasonCRLExpired || refused == ReasonCRLNotYetValid {
			continue
		}
		ic.mu.Lock()
		still := ic.conns[c] == t && t.idle
		if still {
			t.ci.raw.Close()
			delete(ic.conns, c)
		}
		ic.mu.Unlock()
		if !still {
			continue
		}
		p.metrics.idleClosed(refused)
		var cn, serial string
		if id != nil {
			cn, serial = id.CN, id.SerialHex
		}
		p.log.line("idle-closed", "remote", c.RemoteAddr().String(), "cn", cn, "serial", serial, "reason", refused)
	}
}
