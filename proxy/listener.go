package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync"
	"time"
)

// tlsListener accepts raw connections (at most max open at once), runs each
// TLS handshake in its own goroutine under a deadline, logs and counts the
// refused ones, and hands the rest to http.Server as *tls.Conn.
type tlsListener struct {
	net.Listener
	p     *Proxy
	sem   chan struct{}
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newTLSListener(ln net.Listener, p *Proxy) *tlsListener {
	l := &tlsListener{
		Listener: ln,
		p:        p,
		sem:      make(chan struct{}, p.cfg.MaxConns),
		conns:    make(chan net.Conn),
		done:     make(chan struct{}),
	}
	go l.acceptLoop()
	return l
}

func (l *tlsListener) acceptLoop() {
	var backoff time.Duration
	for {
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return
		}
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.sem
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
		l.p.metrics.openConns.Add(1)
		go l.handshake(&countedConn{Conn: c, release: func() { <-l.sem; l.p.metrics.openConns.Add(-1) }})
	}
}

func (l *tlsListener) handshake(raw net.Conn) {
	tc := tls.Server(raw, l.p.tlsConfig)
	ctx, cancel := context.WithTimeout(context.Background(), l.p.cfg.HandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		l.p.forget(tc)
		l.p.refusedHandshake(raw.RemoteAddr(), err)
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

// Accept returns the next connection whose handshake succeeded.
func (l *tlsListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting; connections already handed out stay open.
func (l *tlsListener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.Listener.Close()
	})
	return err
}

// countedConn releases its slot of the connection limit once, on Close.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
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
