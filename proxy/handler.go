package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"minica/identity"
	"minica/internal/endpoint"
	"minica/proxy/internal/h1direct"
	"minica/proxy/policy"
	"minica/revoke"
)

// conn is what the proxy knows about one client connection: verified once at
// the handshake, re-verified when the trust generation changes.
type conn struct {
	certs []*x509.Certificate
	// raw is the TCP connection under TLS, closed to cut the client off
	// (see Proxy.cut).
	raw net.Conn
	// cancel ends the connection's context, and so those of all its
	// requests, when the client is cut off (see Proxy.cut).
	cancel context.CancelFunc

	mu      sync.Mutex
	gen     uint64
	id      *identity.Identity
	headers []identity.Header
	hdrLen  int    // bytes of the identity headers on the wire
	refused string // a Reason constant, or ""

	why *VerifyError // the refusal of the certificate, if refused for it

	// checked is the first of the identity headers last checked for the
	// outbound request (see checkRendered).
	checked atomic.Pointer[identity.Header]
}

type connKey struct{}

// writeTimedOut reports whether a write to ci's client ran past
// WriteTimeout, which ended the connection (see clientConn.Write).
func (ci *conn) writeTimedOut() bool {
	cc, ok := ci.raw.(*clientConn)
	return ok && cc.writeTimedOut()
}

// connContext runs once per connection, after the handshake.
func (p *Proxy) connContext(ctx context.Context, c net.Conn) context.Context {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return ctx
	}
	cs := tc.ConnectionState()
	ci := &conn{certs: cs.PeerCertificates, raw: tc.NetConn()}
	t := p.trust.Load()
	var chain []*x509.Certificate
	if len(ci.certs) > 0 {
		if v, ok := p.verified.LoadAndDelete(ci.certs[0]); ok && v.(verified).gen == t.gen {
			chain = v.(verified).chain
		}
	}
	p.check(ci, t, chain)
	p.idle.track(c, ci)
	// Once per connection, not per request: the server's own context has
	// no cancellation of its own, so this one holds no resource and needs
	// no cancel when the connection ends.
	ctx, ci.cancel = context.WithCancel(ctx)
	return context.WithValue(ctx, connKey{}, ci)
}

// verified is the result of a successful VerifyConnection, kept for the
// connection's connContext so that a handshake is verified once.
type verified struct {
	chain []*x509.Certificate
	gen   uint64
}

// forget drops what VerifyConnection kept for a connection that will not
// reach connContext.
func (p *Proxy) forget(tc *tls.Conn) {
	if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
		p.verified.Delete(certs[0])
	}
}

// check (re-)verifies ci against t, unless chain is the result of a
// verification against t already, and refreshes its identity headers.
func (p *Proxy) check(ci *conn, t *trust, chain []*x509.Certificate) {
	ci.gen = t.gen
	var err error
	if chain == nil {
		chain, err = verifyClient(ci.certs, t, p.cfg.CRLGrace, p.now())
	}
	if err != nil {
		var ve *VerifyError
		ci.refused = ReasonBadChain
		if errors.As(err, &ve) {
			ci.refused = ve.Reason
		}
		ci.why = ve
		return
	}
	ci.why = nil
	if ci.id == nil {
		id, err := identity.New(ci.certs[0], chain)
		if err != nil {
			ci.refused = ReasonBadChain
			return
		}
		id.DaysLeft = identity.DaysLeft(id.NotAfter, p.cfg.Now())
		ci.id = id
		ci.headers = p.headers.Render(id)
		ci.hdrLen = identity.WireSize(ci.headers)
		p.metrics.sawClient(id)
		p.metrics.days.observe(id.NotAfter, p.cfg.Now())
	}
	ci.refused = ""
}

// current returns ci's state, re-verified if the trust changed since, and
// refused while the CRL is past nextUpdate (beyond CRLGrace) or once the
// client certificate has expired.
func (p *Proxy) current(ci *conn) (id *identity.Identity, headers []identity.Header, hdrLen int, refused string) {
	t := p.trust.Load()
	now := p.now()
	ci.mu.Lock()
	defer ci.mu.Unlock()
	for _, c := range t.crls {
		if err := revoke.JudgeCRL(revoke.Facts{CAs: t.cas, CRL: c.CRL, CRLIssuer: c.Issuer,
			Grace: p.cfg.CRLGrace, Skew: clockSkew, At: now}); err != nil {
			return ci.id, nil, 0, refusal(err, nil).Reason
		}
	}
	if ci.gen != t.gen {
		p.check(ci, t, nil)
	}
	// A long-lived connection outliving its certificate.
	if ci.id != nil && ci.refused == "" && now.After(ci.id.NotAfter) {
		return ci.id, nil, 0, ReasonExpired
	}
	p.refreshDaysLeft(ci, now)
	return ci.id, ci.headers, ci.hdrLen, ci.refused
}

var refusalText = map[string]string{
	ReasonRevoked:    "client certificate revoked",
	ReasonNotAllowed: "client not allowed",
	ReasonCRLExpired: "revocation list expired",
	ReasonExpired:    "client certificate expired",
}

// refuseWithText answers a request whose client is refused for reason (a
// Reason constant): 503 while the CRL is expired (or not yet valid), else
// 403, with a short text: RefusalAlert mode's answer (Proxy.refuse
// chooses between it and a refusal page), and that of an exchange closed
// while its upstream had not answered.
func refuseWithText(w http.ResponseWriter, reason string) {
	code := http.StatusForbidden
	if reason == ReasonCRLExpired || reason == ReasonCRLNotYetValid {
		code = http.StatusServiceUnavailable
	}
	text, ok := refusalText[reason]
	if !ok {
		text = "client certificate refused: " + reason
	}
	http.Error(w, text, code)
}

// ServeHTTP checks the client of r and forwards r upstream with its
// identity headers, or answers 403, 431 or 503 with a short reason. While
// it forwards, the exchange is registered, to be closed if its client is
// refused later on (see Proxy.sweep).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// The recorder, the exchange and the direct way's part of the request
	// in one allocation.
	both := &struct {
		rec recorder
		x   exchange
		dr  directRewriter
	}{rec: recorder{ResponseWriter: w}}
	rec := &both.rec
	reason := ""
	var id *identity.Identity
	var x *exchange
	defer func() {
		if reason == "" {
			reason = rec.reason
		}
		if reason == "" && bodyTimedOut(r) {
			reason = ReasonBodyTimeout // after the response began: a stream cut
		}
		p.metrics.request(rec.status, reason)
		if x != nil && reason == "" {
			reason = x.cutReason() // logged, not counted as a refusal
		}
		if reason == "" && (rec.writeTimedOut || x != nil && x.ci.writeTimedOut()) {
			reason = ReasonWriteTimeout // logged, not counted as a refusal
		}
		if reason == "" && rec.clientClosed {
			reason = ReasonClientClosed // logged, not counted as a refusal
		}
		if reason == "" && rec.upstreamCause != "" {
			reason = rec.upstreamCause // logged, not counted as a refusal
		}
		p.logRequest(r, id, rec, reason, start)
	}()
	ci, _ := r.Context().Value(connKey{}).(*conn)
	if ci == nil {
		reason = ReasonNoCertificate
		http.Error(rec, "client certificate required", http.StatusForbidden)
		return
	}
	x = &both.x
	x.ci, x.r = ci, r
	rec.x = x
	p.exchanges.add(x)
	defer p.exchanges.remove(x)
	id, headers, hdrLen, refused := p.admit(x)
	if refused != "" {
		reason = refused
		id = p.refuse(rec, r, ci, id, refused)
		return
	}
	rp, d := p.route(r, id)
	rec.route = d.Route
	if d.Reason != "" {
		reason = d.Reason
		p.refuseDecision(rec, r, ci, id, d)
		return
	}
	in := headerBytes(r.Header)
	if in > p.cfg.MaxHeaderBytes {
		reason = "header-too-large"
		http.Error(rec, "request headers exceed "+strconv.Itoa(p.cfg.MaxHeaderBytes)+" bytes", http.StatusRequestHeaderFieldsTooLarge)
		return
	}
	if in+hdrLen > p.cfg.UpstreamHeaderBytes {
		reason = "upstream-header-budget"
		http.Error(rec, "request headers with identity headers exceed the upstream budget of "+strconv.Itoa(p.cfg.UpstreamHeaderBytes)+" bytes", http.StatusRequestHeaderFieldsTooLarge)
		return
	}
	x.headers = headers
	r = withPath(r, d.Path)
	rec.forwarded = true
	if r.ProtoMajor == 1 && r.Body != nil && r.Body != http.NoBody {
		// An upstream may answer before it has read the whole body: without
		// full duplex, net/http's server takes the rest of the body for
		// itself once the answer's header is written, and closes it under
		// the request still forwarding it, which cuts the answer.
		http.NewResponseController(rec).EnableFullDuplex()
	}
	if t, ok := rp.Transport.(*h1direct.Transport); ok && t.Takes(r) {
		p.forwardDirect(rp, t, rec, r, x, &both.dr)
		return
	}
	rp.ServeHTTP(rec, r)
}

// headerBytes counts the request headers as HTTP/1.1 puts them on the wire.
func headerBytes(h http.Header) int {
	n := 0
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// newReverseProxy returns the ReverseProxy of the upstream up, an https one
// verified against roots (nil: the system roots).
func (p *Proxy) newReverseProxy(up endpoint.Upstream, roots *x509.CertPool) *httputil.ReverseProxy {
	dialer := &net.Dialer{Timeout: p.cfg.UpstreamDialTimeout}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   p.cfg.UpstreamDialTimeout,
		ResponseHeaderTimeout: p.cfg.UpstreamResponseHeaderTimeout,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     up.URL.Scheme == "https",
		// Forward the client's Accept-Encoding, or none, as it is: left
		// on, the Transport asks for gzip on every request without one and
		// unzips the answer, work a proxy should leave to the endpoints.
		DisableCompression: true,
	}
	if up.Socket != "" {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", up.Socket)
		}
	}
	var rt http.RoundTripper = tr
	if !p.cfg.StandardForwarding {
		rt = h1direct.NewTransport(tr, up.URL)
	}
	return &httputil.ReverseProxy{
		Rewrite:      func(pr *httputil.ProxyRequest) { p.rewrite(pr, up.URL) },
		Transport:    rt,
		ErrorHandler: p.upstreamError,
		ErrorLog:     p.srv.ErrorLog,
		BufferPool:   bufferPool{},
	}
}

// bufferPool spares ReverseProxy a 32 KiB allocation per response body.
type bufferPool struct{}

var buffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte  { return *buffers.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { buffers.Put(&b) }

// rewrite runs after ReverseProxy removed the hop-by-hop headers, including
// those a client named in Connection, so nothing the client sends can remove
// what it sets.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest, target *url.URL) {
	pr.SetURL(target)
	pr.Out.Host = pr.In.Host
	p.reserved.Strip(pr.Out.Trailer) // some frameworks merge trailers into headers
	var headers []identity.Header
	if x := p.exchanges.get(pr.In); x != nil {
		headers = x.headers
	}
	// The inbound headers but the reserved ones, in a map with room for the
	// proxy's own, so that it does not grow (and copy itself) as they are set.
	out := make(http.Header, len(pr.Out.Header)+len(headers)+3)
	for name, values := range pr.Out.Header {
		if !p.reserved.Holds(name) {
			out[name] = values
		}
	}
	pr.Out.Header = out
	p.setOwnHeaders(out, pr.In, headers, nil)
}

// setOwnHeaders sets in out the X-Forwarded-* headers of in (what
// ProxyRequest.SetXForwarded sets, no X-Forwarded-For being left to
// extend) and the identity headers. Their values share one backing array,
// values's if it has room, which it returns: one allocation at most, not
// one per header; each value gets a full slice of capacity 1, so an
// append to one never writes into the next.
func (p *Proxy) setOwnHeaders(out http.Header, in *http.Request, headers []identity.Header, values []string) []string {
	if n := len(headers) + 3; cap(values) < n {
		values = make([]string, 0, n)
	}
	set := func(name, value string) {
		values = append(values, value)
		n := len(values)
		out[name] = values[n-1 : n : n]
	}
	if ip, _, err := net.SplitHostPort(in.RemoteAddr); err == nil {
		set("X-Forwarded-For", ip)
	}
	set("X-Forwarded-Host", in.Host)
	if in.TLS == nil {
		set("X-Forwarded-Proto", "http")
	} else {
		set("X-Forwarded-Proto", "https")
	}
	for _, h := range headers {
		set(h.Name, h.Value)
	}
	return values
}

func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	rec, _ := w.(*recorder)
	if rec != nil && rec.x != nil {
		// Closed before the upstream answered: the client's connection
		// is gone, but the log shows the refusal.
		if reason := rec.x.cutReason(); reason != "" {
			refuseWithText(w, reason)
			return
		}
	}
	if clientClosed(r) {
		abortClientClosed(rec) // not the upstream's fault: no 502
	}
	cause := UpstreamCause(err)
	code := upstreamStatus(cause)
	if rec != nil {
		rec.upstreamErr, rec.upstreamCause = err, cause
	}
	if p.cfg.Refusal == RefusalPage {
		// A browser's user learns the fault is not theirs, and what to quote.
		writeRefusal(w, r, upstreamPage(cause, p.cfg.Now()))
		return
	}
	http.Error(w, http.StatusText(code), code)
}

// recorder notes the status for the log and metrics; Unwrap lets
// http.ResponseController reach Flush and Hijack (WebSocket upgrades).
type recorder struct {
	http.ResponseWriter
	status      int
	upstreamErr error
	// upstreamCause: upstreamErr's cause (a ReasonUpstream constant).
	upstreamCause string
	x             *exchange     // nil for a request refused before its exchange
	reason        string        // set by an error handler that refuses the request
	bytes         int64         // response body bytes written (none of a tunnel)
	forwarded     bool          // the request went to the upstream
	route         *policy.Route // the request's route, nil if none matched
	// clientClosed: the client went away before the upstream answered.
	clientClosed bool
	// writeTimedOut: a write of the response ran past WriteTimeout.
	writeTimedOut bool
}

func (r *recorder) WriteHeader(code int) {
	// An informational answer (103 Early Hints) comes before the status
	// to log; 101 is the last a hijacked connection writes.
	if r.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	if err != nil && isTimeout(err) {
		r.writeTimedOut = true
	}
	return n, err
}

// FlushError flushes the response as http.ResponseController does, noting
// a write timeout as Write does: a streamed response's bytes go out there.
func (r *recorder) FlushError() error {
	err := http.NewResponseController(r.ResponseWriter).Flush()
	if err != nil && isTimeout(err) {
		r.writeTimedOut = true
	}
	return err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Hijack hands the connection to ReverseProxy for a protocol upgrade; the
// log then shows 101, which ReverseProxy writes on the hijacked connection.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(r.ResponseWriter).Hijack()
	if err == nil && r.status == 0 {
		r.status = http.StatusSwitchingProtocols
	}
	return c, rw, err
}
