package proxy

import (
	"container/list"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// tlsListener accepts raw connections, runs each TLS handshake in its own
// goroutine under a deadline, logs and counts the refused ones, and hands
// the rest to http.Server as *tls.Conn.
//
// Handshakes and connections have budgets of their own, so that clients
// without a certificate cannot take the slots of those with one: at most
// MaxHandshakes in progress; once half of them are, a new connection from
// a source with MaxHandshakesPerSource in progress is closed at once; when
// all are, a new connection closes the oldest, one that has sent nothing
// if there is one. Only a connection whose handshake succeeded
// takes one of the MaxConns slots. In RefusalPage mode a connection
// whose client presented no certificate that verifies holds its slot only
// until another needs it: while all are taken, a new connection takes the
// slot of the oldest such one, which is closed. Otherwise, while all are
// taken, new connections wait in the listen backlog.
type tlsListener struct {
	net.Listener
	p     *Proxy
	sem   chan struct{} // the MaxConns slots
	freed chan struct{} // a slot was freed (wakes acceptLoop)
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once

	mu        sync.Mutex
	shaking   list.List            // *clientConn in their handshake, oldest first
	perSource map[netip.Prefix]int // of those, by source
	lastShed  map[string]time.Time
	// unverified are the *clientConn holding a MaxConns slot without a
	// certificate that verified (RefusalPage), oldest first.
	unverified list.List
}

func newTLSListener(ln net.Listener, p *Proxy) *tlsListener {
	l := &tlsListener{
		Listener:  ln,
		p:         p,
		sem:       make(chan struct{}, p.cfg.MaxConns),
		freed:     make(chan struct{}, 1),
		conns:     make(chan net.Conn),
		done:      make(chan struct{}),
		perSource: map[netip.Prefix]int{},
		lastShed:  map[string]time.Time{},
	}
	go l.acceptLoop()
	return l
}

func (l *tlsListener) acceptLoop() {
	var backoff time.Duration
	for {
		for len(l.sem) == cap(l.sem) && !l.canEvict() {
			select {
			case <-l.freed:
			case <-l.done:
				return
			}
		}
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				l.Close()
				return
			}
			// Like net/http: other accept errors (EMFILE, ECONNABORTED)
			// pass; back off so as not to spin on them.
			l.p.log.line("accept-error", "error", err.Error())
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-l.done:
				return
			}
			continue
		}
		backoff = 0
		if cc := l.admit(c); cc != nil {
			go l.handshake(cc)
		}
	}
}

// admit gives c a handshake slot, or closes it when its source has all of
// its share and half the slots are taken; when all slots are taken it
// closes the oldest handshake.
func (l *tlsListener) admit(c net.Conn) *clientConn {
	cc := &clientConn{Conn: c, l: l, source: sourceOf(c.RemoteAddr()), writeTimeout: l.p.cfg.WriteTimeout}
	l.mu.Lock()
	select {
	case <-l.done:
		l.mu.Unlock()
		c.Close()
		return nil
	default:
	}
	// A source's share binds once half the slots are taken: a burst of
	// one client host (a load test, a NAT) passes while slots are plenty.
	if l.perSource[cc.source] >= l.p.cfg.MaxHandshakesPerSource && l.shaking.Len() >= l.p.cfg.MaxHandshakes/2 {
		l.mu.Unlock()
		l.shed(c, "source-limit")
		return nil
	}
	var victim *clientConn
	if l.shaking.Len() >= l.p.cfg.MaxHandshakes {
		victim = l.oldestLocked()
		l.leaveLocked(victim)
		victim.shed.Store(true)
	}
	cc.elem = l.shaking.PushBack(cc)
	l.perSource[cc.source]++
	l.p.metrics.handshaking.Add(1)
	l.mu.Unlock()
	if victim != nil {
		l.shed(victim.Conn, "handshake-limit")
	}
	return cc
}

// oldestLocked returns the oldest handshaking connection that has sent
// nothing, else the oldest. l.mu is held and some are in progress.
func (l *tlsListener) oldestLocked() *clientConn {
	for e := l.shaking.Front(); e != nil; e = e.Next() {
		if cc := e.Value.(*clientConn); !cc.heard.Load() {
			return cc
		}
	}
	return l.shaking.Front().Value.(*clientConn)
}

// leaveLocked frees the handshake slot of cc, if it still has one.
func (l *tlsListener) leaveLocked(cc *clientConn) {
	if cc.elem == nil {
		return
	}
	l.shaking.Remove(cc.elem)
	cc.elem = nil
	if l.perSource[cc.source]--; l.perSource[cc.source] == 0 {
		delete(l.perSource, cc.source)
	}
	l.p.metrics.handshaking.Add(-1)
}

// shed closes c, a connection refused for a limit, at once and without
// TIME_WAIT; it counts it, and logs it at most once a minute per reason.
func (l *tlsListener) shed(c net.Conn, reason string) {
	raw := c
	if cc, ok := c.(*clientConn); ok {
		raw = cc.Conn
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
	l.p.metrics.connShed(reason)
	now := time.Now()
	l.mu.Lock()
	logIt := now.Sub(l.lastShed[reason]) >= time.Minute
	if logIt {
		l.lastShed[reason] = now
	}
	l.mu.Unlock()
	if logIt {
		l.p.log.line("connections-shed", "reason", reason, "remote", c.RemoteAddr().String())
	}
}

func (l *tlsListener) handshake(cc *clientConn) {
	tc := tls.Server(cc, l.p.tlsConfig)
	ctx, cancel := context.WithTimeout(context.Background(), l.p.cfg.HandshakeTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	l.mu.Lock()
	l.leaveLocked(cc)
	l.mu.Unlock()
	if err != nil {
		l.p.forget(tc)
		switch stage, early := closedEarly(cc, err); {
		case cc.shed.Load(): // counted when shed
		case early:
			l.p.metrics.connClosedEarly(stage) // counted only: see closedEarly
		default:
			l.p.refusedHandshake(cc.RemoteAddr(), err)
		}
		tc.Close()
		return
	}
	if !l.takeSlot(cc, l.p.verifiedAtHandshake(tc)) {
		l.p.forget(tc)
		tc.Close()
		return
	}
	select {
	case l.conns <- tc:
	case <-l.done:
		l.p.forget(tc)
		tc.Close()
	}
}

// closedEarly reports whether the handshake of cc failed with err only
// because the client closed (or reset) the connection without a word: no
// alert, nothing the proxy refused. That is no refusal: browsers open
// connections ahead of need and drop those they do not use (Chromium's
// pre-connections, one per visit, send their ClientHello and close once the
// server's flight came), and TCP health checks connect and close. Logged
// as refusals they would make alerts on handshake-refused cry wolf. It
// returns the stage, "before-hello" (no byte came) or "in-handshake".
// A client the proxy refused is never one, however soon it closed: the
// proxy reads what the client sent before closing, its certificate too,
// and the refusal is the handshake's error (TestRefusedClientClosingEarly).
func closedEarly(cc *clientConn, err error) (stage string, ok bool) {
	if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		return "", false
	}
	if !cc.heard.Load() {
		return "before-hello", true
	}
	return "in-handshake", true
}

// canEvict reports whether a connection holds a MaxConns slot that a new
// one may take (see takeSlot).
func (l *tlsListener) canEvict() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unverified.Len() > 0
}

// takeSlot gives cc, whose handshake succeeded, a MaxConns slot: a free
// one, else the slot of the oldest connection without a verified
// certificate, closed for it (conn-limit), else the next one freed. cc
// holds its own slot only until another needs it unless verified. It
// returns false when the listener closed first.
func (l *tlsListener) takeSlot(cc *clientConn, verified bool) bool {
	l.mu.Lock()
	select {
	case l.sem <- struct{}{}:
		l.p.metrics.openConns.Add(1)
		l.holdLocked(cc, verified)
		l.mu.Unlock()
		return true
	default:
	}
	victim := l.evictLocked()
	if victim != nil {
		l.holdLocked(cc, verified) // the victim's slot, counted already
	}
	l.mu.Unlock()
	if victim != nil {
		l.shed(victim, "conn-limit")
		return true
	}
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return false
	}
	l.p.metrics.openConns.Add(1)
	l.mu.Lock()
	l.holdLocked(cc, verified)
	l.mu.Unlock()
	return true
}

// holdLocked records that cc holds a slot.
func (l *tlsListener) holdLocked(cc *clientConn, verified bool) {
	cc.counted.Store(true)
	if !verified {
		cc.slot = l.unverified.PushBack(cc)
	}
}

// evictLocked takes the slot of the oldest connection without a verified
// certificate, and returns it, to be closed; nil if there is none.
func (l *tlsListener) evictLocked() *clientConn {
	for e := l.unverified.Front(); e != nil; e = l.unverified.Front() {
		cc := e.Value.(*clientConn)
		l.unverified.Remove(e)
		cc.slot = nil
		// It may be closing, and freeing its slot, itself.
		if cc.counted.CompareAndSwap(true, false) {
			return cc
		}
	}
	return nil
}

// release frees the MaxConns slot of cc.
func (l *tlsListener) release(cc *clientConn) {
	l.mu.Lock()
	if cc.slot != nil {
		l.unverified.Remove(cc.slot)
		cc.slot = nil
	}
	l.mu.Unlock()
	<-l.sem
	l.p.metrics.openConns.Add(-1)
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// Accept returns the next connection whose handshake succeeded.
func (l *tlsListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting and closes the connections still in their
// handshake; connections already handed out stay open.
func (l *tlsListener) Close() error {
	var err error
	l.once.Do(func() {
		l.mu.Lock()
		close(l.done)
		var open []net.Conn
		for e := l.shaking.Front(); e != nil; e = e.Next() {
			cc := e.Value.(*clientConn)
			cc.shed.Store(true)
			open = append(open, cc.Conn)
		}
		l.mu.Unlock()
		for _, c := range open {
			c.Close()
		}
		err = l.Listener.Close()
	})
	return err
}

// sourceOf is the key of the per-source handshake limit: the IPv4
// address, or the /64 of an IPv6 address (one host's usual allocation);
// all clients of a unix socket are one source.
func sourceOf(a net.Addr) netip.Prefix {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}
	}
	ip := ta.AddrPort().Addr().Unmap()
	if ip.Is4() {
		return netip.PrefixFrom(ip, 32)
	}
	p, _ := ip.Prefix(64)
	return p
}

// clientConn is a raw client connection. It notes whether the client has
// sent anything (an idle handshake is the first to go), bounds every write
// to WriteTimeout, and frees its MaxConns slot, if it took one, on Close.
type clientConn struct {
	net.Conn
	l      *tlsListener
	source netip.Prefix
	elem   *list.Element // in l.shaking, under l.mu; nil once out
	heard  atomic.Bool   // the client sent a byte
	shed   atomic.Bool   // closed by the listener: no handshake-refused line

	counted atomic.Bool   // holds a MaxConns slot
	slot    *list.Element // in l.unverified, under l.mu; nil if not there

	writeTimeout time.Duration
	wmu          sync.Mutex
	deadline     time.Time // set by SetWriteDeadline or SetDeadline
	writeStart   time.Time // of the write in progress; zero: none
	cut          error     // the timeout of a write past WriteTimeout, which ended the connection
	timedOut     atomic.Bool
}

func (c *clientConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.heard.Load() {
		c.heard.Store(true)
	}
	return n, err
}

// Write writes b within WriteTimeout of the write's start, and never
// beyond the caller's deadline; crypto/tls writes a record (at most 16
// KiB) at a time. A write the client has not taken by WriteTimeout ends
// the connection: it and every later write fail with the timeout at once
// (crypto/tls's close_notify alert waits no more), and Close resets the
// connection. Once the socket buffers are full, a write goes on only when
// the system reports the socket writable again (see waitWritable), not as
// soon as a few bytes fit: a client's kernel goes on taking a few tens of
// KiB for a while after its reader stopped, and those must not make the
// write, and the next one with a WriteTimeout of its own, go on.
func (c *clientConn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	if c.cut != nil {
		err := c.cut
		c.wmu.Unlock()
		return 0, err
	}
	start := time.Now()
	c.writeStart = start
	c.Conn.SetWriteDeadline(c.writeDeadlineLocked())
	c.wmu.Unlock()
	defer c.endWrite()
	written := 0
	for {
		n, err := c.Conn.Write(b[written:])
		written += n
		for err != nil && isTimeout(err) && c.goOn(start, err) {
			err = waitWritable(c.Conn)
		}
		if err != nil { // crypto/tls and net/http give the connection up
			return written, err
		}
		if written == len(b) {
			return written, nil
		}
	}
}

// endWrite notes that the write in progress returned.
func (c *clientConn) endWrite() {
	c.wmu.Lock()
	c.writeStart = time.Time{}
	c.wmu.Unlock()
}

// goOn reports whether a write that started at start, and timed out with
// err, goes on, and if so puts its deadline in force: unless the caller's
// deadline (as it is now: it may have moved during the write) has passed,
// or WriteTimeout has since start, which ends the connection.
func (c *clientConn) goOn(start time.Time, err error) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if passed(start.Add(c.writeTimeout)) {
		c.cut = err
		c.timedOut.Store(true)
		return false
	}
	want := c.writeDeadlineLocked()
	if passed(want) {
		return false
	}
	c.Conn.SetWriteDeadline(want)
	return true
}

// writeTimedOut reports whether a write to the client ran past
// WriteTimeout, ending the connection.
func (c *clientConn) writeTimedOut() bool { return c.timedOut.Load() }

// writeDeadlineLocked is the deadline of the write in progress:
// WriteTimeout after its start, or the caller's deadline if earlier.
func (c *clientConn) writeDeadlineLocked() time.Time {
	d := c.writeStart.Add(c.writeTimeout)
	if !c.deadline.IsZero() && c.deadline.Before(d) {
		return c.deadline
	}
	return d
}

// passed reports whether deadline d has come, at the time of the call.
func passed(d time.Time) bool { return !d.IsZero() && !time.Now().Before(d) }

// isTimeout reports whether err is, or wraps, a net.Error that timed out.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// SetWriteDeadline sets the caller's deadline, which the next write takes
// with its own; a write in progress takes it at once.
func (c *clientConn) SetWriteDeadline(t time.Time) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.deadline = t
	if c.writeStart.IsZero() {
		return nil
	}
	return c.Conn.SetWriteDeadline(c.writeDeadlineLocked())
}

func (c *clientConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

func (c *clientConn) Close() error {
	if tc, ok := c.Conn.(*net.TCPConn); ok && c.writeTimedOut() {
		// A reset: the kernel would otherwise go on offering the client
		// the megabytes it holds for it, which it does not take.
		tc.SetLinger(0)
	}
	err := c.Conn.Close()
	if c.counted.CompareAndSwap(true, false) {
		c.l.release(c)
	}
	return err
}

// handshakeReason classifies a failed handshake, at now: a refusal of
// VerifyConnection, or of Go's verifier (the chain or the validity).
func handshakeReason(err error, now time.Time) (string, *VerifyError) {
	var ve *VerifyError
	if errors.As(err, &ve) {
		return ve.Reason, ve
	}
	var cve *tls.CertificateVerificationError
	if errors.As(err, &cve) && len(cve.UnverifiedCertificates) > 0 {
		leaf := cve.UnverifiedCertificates[0]
		ve := &VerifyError{Reason: chainReason(cve.Err, leaf, now), Cert: leaf, Err: cve.Err}
		return ve.Reason, ve
	}
	if strings.Contains(err.Error(), "didn't provide a certificate") {
		return ReasonNoCertificate, nil
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return ReasonTimeout, nil
	}
	return ReasonTLS, nil
}
