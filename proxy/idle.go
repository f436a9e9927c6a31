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
//
// A connection that is not idle when a sweep passes (its response is
// written, but http.Server has not yet called it idle: the client may
// well have read the response and be waiting) is checked when it turns
// idle, so that no connection escapes a sweep by its timing.
type idleConns struct {
	mu     sync.Mutex
	conns  map[net.Conn]*idleConn
	sweeps uint64 // sweeps begun (see closeIdleRefused)
}

type idleConn struct {
	ci   *conn
	idle bool
	// swept is ic.sweeps when c was last idle at a sweep, or tracked: a
	// connection turning idle with swept behind missed a sweep.
	swept uint64
}

func newIdleConns() *idleConns { return &idleConns{conns: map[net.Conn]*idleConn{}} }

// track registers c, served for ci; connContext calls it before the first
// ConnState of c.
func (ic *idleConns) track(c net.Conn, ci *conn) {
	ic.mu.Lock()
	ic.conns[c] = &idleConn{ci: ci, swept: ic.sweeps}
	ic.mu.Unlock()
}

// connState is http.Server.ConnState: it follows c from idle to active
// and back, and forgets it once closed or hijacked. A connection turning
// idle after a sweep passed it by is checked as the sweep would have.
func (p *Proxy) connState(c net.Conn, s http.ConnState) {
	ic := p.idle
	ic.mu.Lock()
	t, ok := ic.conns[c]
	if !ok {
		ic.mu.Unlock()
		return
	}
	missed := false
	switch s {
	case http.StateIdle:
		t.idle = true
		missed = t.swept != ic.sweeps
		t.swept = ic.sweeps
	case http.StateActive:
		t.idle = false
	case http.StateClosed, http.StateHijacked:
		delete(ic.conns, c)
	}
	ic.mu.Unlock()
	if missed {
		p.closeIfRefused(c, t)
	}
}

// closeIdleRefused closes every idle connection whose client is refused now
// (see Proxy.current) for a reason of its own, and logs and counts each.
// The connections not idle now are checked when they turn idle (see
// connState).
func (p *Proxy) closeIdleRefused() {
	ic := p.idle
	ic.mu.Lock()
	ic.sweeps++
	idle := make(map[net.Conn]*idleConn)
	for c, t := range ic.conns {
		if t.idle {
			t.swept = ic.sweeps
			idle[c] = t
		}
	}
	ic.mu.Unlock()
	for c, t := range idle {
		p.closeIfRefused(c, t)
	}
}

// closeIfRefused closes c, tracked as t, if its client is refused now for
// a reason of its own and c is still idle; it logs and counts it. The check
// runs without the lock.
func (p *Proxy) closeIfRefused(c net.Conn, t *idleConn) {
	ic := p.idle
	id, _, _, refused := p.current(t.ci)
	// While the CRL itself is unusable every client is refused; their
	// connections stay, to get 503 with the reason and to work again
	// once a fresh CRL comes.
	if refused == "" || refused == ReasonCRLExpired || refused == ReasonCRLNotYetValid {
		return
	}
	ic.mu.Lock()
	still := ic.conns[c] == t && t.idle
	if still {
		t.ci.raw.Close()
		delete(ic.conns, c)
	}
	ic.mu.Unlock()
	if !still {
		return
	}
	p.metrics.idleClosed(refused)
	var cn, serial string
	if id != nil {
		cn, serial = id.CN, id.SerialHex
	}
	p.log.line("idle-closed", "remote", c.RemoteAddr().String(), "cn", cn, "serial", serial, "reason", refused)
}
