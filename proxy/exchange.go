package proxy

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"minica/identity"
)

// exchange is one request being proxied, from the check of its client until
// ServeHTTP returns: a WebSocket or other upgraded tunnel, which
// ReverseProxy runs inside ServeHTTP, and a streaming response or request
// body stay open as long as they last. It is registered before its client is
// checked, so that a sweep (see Proxy.sweep) either sees it or it is checked
// against a trust at least as new as the sweep's.
type exchange struct {
	ci *conn
	r  *http.Request
	// headers are the identity headers of the client's check at admission,
	// which rewrite sets; only the handler's goroutine uses them.
	headers []identity.Header

	mu       sync.Mutex         // held while the client is checked, at admission and in sweeps
	admitted bool               // the client passed the check; the exchange may be cut
	id       *identity.Identity // the client, once admitted
	cut      string             // the Reason the exchange was closed for, or ""
}

// exchanges is the registry of the open exchanges of a Proxy.
type exchanges struct {
	mu sync.Mutex
	// open is keyed by the request ServeHTTP got, which ReverseProxy hands
	// to Rewrite as ProxyRequest.In: rewrite finds its exchange there,
	// with no context value per request.
	open map[*http.Request]*exchange
	// next is when (unix nanoseconds of the Config clock) the expiry
	// watcher checks next; an exchange whose certificate ends sooner
	// wakes it.
	next atomic.Int64
	wake chan struct{}
}

func newExchanges() *exchanges {
	return &exchanges{open: map[*http.Request]*exchange{}, wake: make(chan struct{}, 1)}
}

func (xs *exchanges) add(x *exchange) {
	xs.mu.Lock()
	xs.open[x.r] = x
	xs.mu.Unlock()
}

func (xs *exchanges) remove(x *exchange) {
	xs.mu.Lock()
	delete(xs.open, x.r)
	xs.mu.Unlock()
}

// get returns the open exchange of r, or nil.
func (xs *exchanges) get(r *http.Request) *exchange {
	xs.mu.Lock()
	x := xs.open[r]
	xs.mu.Unlock()
	return x
}

// list returns the open exchanges, so that they can be locked one by one
// without holding the registry.
func (xs *exchanges) list() []*exchange {
	xs.mu.Lock()
	defer xs.mu.Unlock()
	l := make([]*exchange, 0, len(xs.open))
	for _, x := range xs.open {
		l = append(l, x)
	}
	return l
}

// poke makes the expiry watcher compute its next check again.
func (xs *exchanges) poke() {
	select {
	case xs.wake <- struct{}{}:
	default:
	}
}

// admit checks x's client (see Proxy.current) and, if it passes, lets
// sweeps cut x from then on.
func (p *Proxy) admit(x *exchange) (id *identity.Identity, headers []identity.Header, hdrLen int, refused string) {
	x.mu.Lock()
	id, headers, hdrLen, refused = p.current(x.ci)
	if refused == "" {
		x.admitted, x.id = true, id
	}
	x.mu.Unlock()
	if refused == "" && id.NotAfter.UnixNano() < p.exchanges.next.Load() {
		p.exchanges.poke()
	}
	return id, headers, hdrLen, refused
}

// cutReason returns the reason x was closed for, or "".
func (x *exchange) cutReason() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.cut
}

// sweep closes every open exchange whose client is refused now: revoked or
// no longer chaining to the CA bundle since a reload, certificate expired,
// CRL past nextUpdate beyond CRLGrace. Idle connections of such clients
// are closed too (see closeIdleRefused).
func (p *Proxy) sweep() {
	defer p.closeIdleRefused()
	for _, x := range p.exchanges.list() {
		x.mu.Lock()
		if x.admitted && x.cut == "" {
			if _, _, _, refused := p.current(x.ci); refused != "" {
				p.cut(x, refused)
			} else if refused := p.routeRefuses(x); refused != "" {
				p.cut(x, refused)
			}
		}
		x.mu.Unlock()
	}
}

// cut closes x, whose client is refused for reason; x.mu is held. Cancelling
// the client connection's context ends the upstream side of its exchanges
// (the request, the response body, the backend connection of a tunnel):
// every request context of the connection derives from it, so no context is
// made per request for this; closing the client's TCP connection ends
// the client's side at once, even while a write to it is blocked: the
// hijacked tunnel, the HTTP/1.1 response, and over HTTP/2 every stream of
// the connection, all of the same client.
func (p *Proxy) cut(x *exchange, reason string) {
	x.cut = reason
	if x.ci.cancel != nil {
		x.ci.cancel()
	}
	if x.ci.raw != nil {
		x.ci.raw.Close()
	}
	p.metrics.exchangeClosed(reason)
	p.log.line("exchange-closed", "remote", x.r.RemoteAddr, "cn", x.id.CN, "serial", x.id.SerialHex,
		"method", x.r.Method, "uri", x.r.RequestURI, "proto", x.r.Proto, "reason", reason)
}

// maxExpiryWait bounds the wait of the expiry watcher, so that a clock
// that jumps is noticed within it.
const maxExpiryWait = time.Minute

// watchExpiry sweeps the open exchanges when the first of their client
// certificates ends and when the CRL does (past CRLGrace), reloads or not,
// until stop is closed.
func (p *Proxy) watchExpiry(stop <-chan struct{}) {
	t := time.NewTimer(p.nextExpiry())
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-p.exchanges.wake:
		case <-t.C:
			p.sweep()
		}
		t.Reset(p.nextExpiry())
	}
}

// nextExpiry returns how long until the first end of an open exchange's
// client certificate or of the CRL's nextUpdate plus CRLGrace, at most
// maxExpiryWait, and records when that is; 0 if one has ended already (the
// clock jumped, or a certificate ended while its exchange was admitted).
func (p *Proxy) nextExpiry() time.Duration {
	now := p.cfg.Now()
	next := now.Add(maxExpiryWait)
	crl := p.trust.Load().crl
	crlEnd := crl.NextUpdate().Add(p.cfg.CRLGrace)
	crlEnded := !crlState(crl, p.cfg.CRLGrace, now).Usable()
	if !crlEnded && crlEnd.Before(next) {
		next = crlEnd
	}
	due := false
	for _, x := range p.exchanges.list() {
		x.mu.Lock()
		if x.admitted && x.cut == "" {
			switch end := x.id.NotAfter; {
			case crlEnded || now.After(end):
				due = true
			case end.Before(next):
				next = end
			}
		}
		x.mu.Unlock()
	}
	p.exchanges.next.Store(next.UnixNano())
	if due {
		return 0
	}
	// A certificate is valid through its NotAfter, and a CRL through its
	// nextUpdate plus grace: check just after.
	return next.Sub(now) + time.Millisecond
}
