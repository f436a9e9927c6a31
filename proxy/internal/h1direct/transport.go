package h1direct

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Transport sends the common request, one without a body to a plain
// HTTP/1.1 upstream, on the caller's goroutine: it writes the request with
// net/http's Request.Write (Forward with writeHead, which writes the same
// head unsorted) and reads the answer with http.ReadResponse on a
// kept-alive connection of its own pool, where net/http's Transport hands
// each request to two goroutines of its connection (one writes, one reads)
// and back. Everything else (a request body, a protocol upgrade, an https
// upstream and so HTTP/2) goes to the Transport next, and so does every
// request where the platform cannot check an idle connection (see
// idleClean).
//
// It keeps the Transport's guards: the response header is limited to
// the Transport's MaxResponseHeaderBytes, at most max1xx informational responses, the
// request header is checked as the Transport checks it, a connection is
// reused only after its whole answer and only if no byte came that nobody
// asked for, and a request is sent again only when it is replayable and a
// reused connection failed before any byte of an answer.
type Transport struct {
	next                  http.RoundTripper
	target                *url.URL // the upstream, for Forward; nil: none
	dial                  func(ctx context.Context, addr string) (net.Conn, error)
	responseHeaderTimeout time.Duration
	idleTimeout           time.Duration
	maxIdlePerHost        int
	maxIdle               int
	maxHeader             int64 // bytes of a response header, 1xx included

	mu    sync.Mutex
	idle  map[string][]*h1Conn // by upstream address, most recently used last
	nIdle int
	sweep *time.Timer // closes connections idle past idleTimeout; nil when unarmed
}

const (
	// defaultMaxResponseHeader is net/http's Transport default.
	defaultMaxResponseHeader = 10 << 20
	// max1xx is how many informational responses may precede the answer
	// (net/http's Transport allows 5).
	max1xx = 5
)

// h1Conn is one connection to the upstream.
type h1Conn struct {
	addr   string
	c      net.Conn
	lr     limitedReader
	br     *bufio.Reader
	bw     *bufio.Writer
	idle   *idleCheck
	idleAt time.Time
	cut    func() // ends its reads and writes at once; made once, for each request's AfterFunc
}

// limitedReader reads from r while n > 0, so that a response header cannot
// grow without bound; n is raised once the header is read.
type limitedReader struct {
	r net.Conn
	n int64
}

// errHeaderTooLong is what a read returns once the response header went
// past its limit.
var errHeaderTooLong = errors.New("upstream response header too long")

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errHeaderTooLong
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// NewTransport returns the short way in front of tr, with tr's dialer,
// timeouts and pool sizes; target is the upstream of Forward (nil: none,
// only RoundTrip).
func NewTransport(tr *http.Transport, target *url.URL) *Transport {
	maxHeader := tr.MaxResponseHeaderBytes
	if maxHeader <= 0 {
		maxHeader = defaultMaxResponseHeader
	}
	idle := tr.IdleConnTimeout
	if idle <= 0 {
		idle = 90 * time.Second // no connection stays idle for ever
	}
	return &Transport{
		maxHeader: maxHeader,
		next:      tr,
		target:    target,
		dial: func(ctx context.Context, addr string) (net.Conn, error) {
			return tr.DialContext(ctx, "tcp", addr)
		},
		responseHeaderTimeout: tr.ResponseHeaderTimeout,
		idleTimeout:           idle,
		maxIdlePerHost:        tr.MaxIdleConnsPerHost,
		maxIdle:               tr.MaxIdleConns,
		idle:                  map[string][]*h1Conn{},
	}
}

// fast reports whether r can go the short way: no body, no upgrade, a
// plain http upstream, a platform that can check idle connections.
func (t *Transport) fast(r *http.Request) bool {
	if !canCheckIdle || r.URL.Scheme != "http" || r.Body != nil && r.Body != http.NoBody || r.ContentLength != 0 {
		return false
	}
	if _, ok := r.Header["Upgrade"]; ok {
		return false
	}
	return len(r.Trailer) == 0 && len(r.TransferEncoding) == 0
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !t.fast(r) {
		return t.next.RoundTrip(r)
	}
	if err := checkOutHeaders(r.Header); err != nil {
		return nil, err
	}
	var info informer
	if trace := httptrace.ContextClientTrace(r.Context()); trace != nil && trace.Got1xxResponse != nil {
		info = got1xxFunc(trace.Got1xxResponse)
	}
	return t.roundTrip(r, info, writeRequest)
}

// informer gets the informational (1xx) answers to a request.
type informer interface {
	got1xx(code int, h textproto.MIMEHeader) error
}

// got1xxFunc is an httptrace Got1xxResponse as an informer.
type got1xxFunc func(int, textproto.MIMEHeader) error

func (f got1xxFunc) got1xx(code int, h textproto.MIMEHeader) error { return f(code, h) }

// writeRequest is net/http's Request.Write.
func writeRequest(w *bufio.Writer, r *http.Request) error { return r.Write(w) }

// roundTrip sends r, which fast accepts and whose header is checked, the
// short way, writing its head with write; info (if not nil) gets each
// informational answer.
func (t *Transport) roundTrip(r *http.Request, info informer, write func(*bufio.Writer, *http.Request) error) (*http.Response, error) {
	ctx := r.Context()
	addr := hostPort(r.URL.Host)
	for attempt := 0; ; attempt++ {
		pc, reused, err := t.get(ctx, addr)
		if err != nil {
			return nil, err
		}
		resp, err, early := t.send(ctx, pc, r, info, write)
		if err == nil {
			return resp, nil
		}
		pc.c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// A kept-alive connection the upstream closed as it was taken
		// fails before any byte of an answer: once more on a new one, as
		// net/http's Transport does.
		if !(early && reused && attempt == 0 && replayable(r)) {
			return nil, err
		}
	}
}

// send writes r on pc and reads the answer's header; early says that the
// connection failed before any byte of an answer, not by timing out.
func (t *Transport) send(ctx context.Context, pc *h1Conn, r *http.Request, info informer, write func(*bufio.Writer, *http.Request) error) (resp *http.Response, err error, early bool) {
	if ctx.Err() != nil {
		return nil, ctx.Err(), false
	}
	// The cut ends pc's reads and writes when ctx ends; stop reports
	// false once it ran or will run: pc must not be used again.
	stop := context.AfterFunc(ctx, pc.cut)
	defer func() {
		if err != nil {
			stop()
		}
	}()
	if t.responseHeaderTimeout > 0 {
		pc.c.SetReadDeadline(time.Now().Add(t.responseHeaderTimeout))
	}
	pc.lr.n = t.maxHeader
	if err := write(pc.bw, r); err != nil {
		return nil, err, closedEarly(err)
	}
	if err := pc.bw.Flush(); err != nil {
		return nil, err, closedEarly(err)
	}
	for n1xx := 0; ; n1xx++ {
		if _, err := pc.br.Peek(1); err != nil {
			return nil, err, n1xx == 0 && closedEarly(err)
		}
		resp, err = http.ReadResponse(pc.br, r)
		if err != nil {
			return nil, err, false
		}
		code := resp.StatusCode
		if code == http.StatusSwitchingProtocols {
			return nil, errors.New("upstream switched protocols, which the request did not ask for"), false
		}
		if code >= 100 && code < 200 {
			// 103 Early Hints and the like pass on, as with the Transport.
			if n1xx >= max1xx {
				return nil, errors.New("upstream sent too many informational responses"), false
			}
			if info != nil {
				if err := info.got1xx(code, textproto.MIMEHeader(resp.Header)); err != nil {
					return nil, err, false
				}
			}
			continue
		}
		break
	}
	// The header is read: the body is bounded by its framing, and by
	// nothing else, as with the Transport.
	pc.lr.n = 1<<63 - 1
	if t.responseHeaderTimeout > 0 {
		pc.c.SetReadDeadline(time.Time{})
		if ctx.Err() != nil { // the cut may have run before
			pc.c.SetDeadline(aLongTimeAgo)
		}
	}
	keep := !resp.Close && !r.Close
	if resp.Body == http.NoBody {
		t.done(pc, keep && stop())
		return resp, nil, false
	}
	resp.Body = &h1Body{rc: resp.Body, pc: pc, t: t, stop: stop, keep: keep}
	return resp, nil, false
}

// closedEarly reports whether err is the upstream having closed the
// connection (not a timeout, not a cancellation).
func closedEarly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// aLongTimeAgo is a deadline that has passed: setting it makes blocked
// reads and writes return at once.
var aLongTimeAgo = time.Unix(1, 0)

// h1Body returns its connection to the pool once read to the end.
type h1Body struct {
	rc   io.ReadCloser
	pc   *h1Conn
	t    *Transport
	stop func() bool // of the cut (see send)
	keep bool
	once sync.Once
}

func (b *h1Body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.finish(true)
	} else if err != nil {
		b.finish(false)
	}
	return n, err
}

func (b *h1Body) Close() error {
	b.finish(false)
	return nil
}

// finish frees the connection: back to the pool after the whole body,
// closed otherwise.
func (b *h1Body) finish(whole bool) {
	b.once.Do(func() {
		// stop is false when the context ended: the cut has set, or
		// will set, a deadline that has passed.
		stopped := b.stop()
		b.t.done(b.pc, whole && b.keep && stopped)
	})
}

// done puts pc back in the pool, or closes it. A connection holding bytes
// beyond its answer is closed: they would be taken for the next answer.
func (t *Transport) done(pc *h1Conn, keep bool) {
	if !keep || pc.br.Buffered() > 0 {
		pc.c.Close()
		return
	}
	pc.idleAt = time.Now()
	t.mu.Lock()
	if l := t.idle[pc.addr]; len(l) < t.maxIdlePerHost && t.nIdle < t.maxIdle {
		t.idle[pc.addr] = append(l, pc)
		t.nIdle++
		pc = nil
		if t.sweep == nil {
			t.sweep = time.AfterFunc(t.idleTimeout, t.closeStale)
		}
	}
	t.mu.Unlock()
	if pc != nil {
		pc.c.Close()
	}
}

// get returns the most recently used idle connection that is still clean
// (see idleClean), or a new one.
func (t *Transport) get(ctx context.Context, addr string) (*h1Conn, bool, error) {
	for {
		t.mu.Lock()
		l := t.idle[addr]
		if len(l) == 0 {
			t.mu.Unlock()
			break
		}
		pc := l[len(l)-1]
		l[len(l)-1] = nil
		t.idle[addr] = l[:len(l)-1]
		t.nIdle--
		t.mu.Unlock()
		if time.Since(pc.idleAt) < t.idleTimeout && pc.idle.idleClean() {
			return pc, true, nil
		}
		pc.c.Close()
	}
	c, err := t.dial(ctx, addr)
	if err != nil {
		return nil, false, err
	}
	pc := &h1Conn{addr: addr, c: c, lr: limitedReader{r: c}, idle: newIdleCheck(c)}
	pc.cut = func() { c.SetDeadline(aLongTimeAgo) }
	pc.br = bufio.NewReader(&pc.lr)
	pc.bw = bufio.NewWriter(c)
	return pc, false, nil
}

// closeStale closes the connections idle for idleTimeout, and runs again
// while some are left.
func (t *Transport) closeStale() {
	var stale []*h1Conn
	t.mu.Lock()
	for addr, l := range t.idle {
		n := 0 // the oldest are first
		for n < len(l) && time.Since(l[n].idleAt) >= t.idleTimeout {
			stale = append(stale, l[n])
			n++
		}
		if n == len(l) {
			delete(t.idle, addr)
		} else if n > 0 {
			t.idle[addr] = append(l[:0], l[n:]...)
		}
		t.nIdle -= n
	}
	t.sweep = nil
	if t.nIdle > 0 {
		t.sweep = time.AfterFunc(t.idleTimeout/2, t.closeStale)
	}
	t.mu.Unlock()
	for _, pc := range stale {
		pc.c.Close()
	}
}

// CloseIdleConnections closes the idle connections of t and of the
// Transport behind it.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle, t.nIdle = map[string][]*h1Conn{}, 0
	t.mu.Unlock()
	for _, l := range idle {
		for _, pc := range l {
			pc.c.Close()
		}
	}
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// replayable reports whether r may be sent twice, as net/http's Transport
// decides it for a request without a body.
func replayable(r *http.Request) bool {
	switch r.Method {
	case "GET", "HEAD", "OPTIONS", "TRACE":
		return true
	}
	_, a := r.Header["Idempotency-Key"]
	_, b := r.Header["X-Idempotency-Key"]
	return a || b
}

// hostPort is host with port 80 when it names none.
func hostPort(host string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), "80")
}
