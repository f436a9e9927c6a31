package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// ReasonBodyTimeout is the reason of a request whose body fell behind
// BodyTimeout and BodyMinRate: the proxy answers 408.
const ReasonBodyTimeout = "body-timeout"

// ReasonWriteTimeout is the reason logged for a request whose client did
// not take its response in time (see Config.WriteTimeout): the proxy cut
// the connection (over HTTP/2 the stream), after the status was sent.
const ReasonWriteTimeout = "write-timeout"

// errBodyTimeout is what a request body read returns once it ran out of
// time; the upstream request then fails with it.
var errBodyTimeout = fmt.Errorf("request body too slow: %w", os.ErrDeadlineExceeded)

// withDeadlines bounds, around next, the reads of the request body (see
// timedBody) and, over HTTP/2, each write of the response (see
// timedWriter); over HTTP/1.1 the client connection bounds writes itself
// (see clientConn.Write).
func (p *Proxy) withDeadlines(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Made only when needed: most requests have no body and come
		// over HTTP/1.1, and it is an allocation a request.
		var rc *http.ResponseController
		if r.Body != nil && r.Body != http.NoBody {
			rc = http.NewResponseController(w)
			b := &timedBody{ReadCloser: r.Body, rc: rc, h1: r.ProtoMajor == 1,
				budget: p.cfg.BodyTimeout, max: p.cfg.BodyTimeout, rate: p.cfg.BodyMinRate}
			// For bodyErrors: ReverseProxy hands it the body wrapped.
			r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, b))
			r.Body = b
			if r.ProtoMajor == 1 {
				// Until timedBody first reads: net/http reads the body of a
				// request answered without reading it (a refusal), to keep
				// the connection, under no deadline of its own.
				rc.SetReadDeadline(time.Now().Add(p.cfg.BodyTimeout))
			}
		}
		if r.ProtoMajor == 2 {
			if rc == nil {
				rc = http.NewResponseController(w)
			}
			tw := &timedWriter{ResponseWriter: w, rc: rc, timeout: p.cfg.WriteTimeout}
			// What the handler left in the stream's buffer is sent after it
			// returns: bound that too.
			defer rc.SetWriteDeadline(time.Now().Add(p.cfg.WriteTimeout))
			w = tw
		}
		if b, _ := r.Body.(*timedBody); b != nil {
			defer b.handlerDone()
		}
		next.ServeHTTP(w, r)
	})
}

// timedBody is a request body that must keep up: the client gets budget
// (BodyTimeout at first) to send the next bytes, and every rate bytes it
// sends earn it a second more, up to BodyTimeout. Only the time spent
// waiting for the client counts, not the time the upstream takes to read.
// A client trickling a byte every few seconds thus runs out after about
// BodyTimeout, however short each pause.
//
// An HTTP/1 body is not read once its handler has returned: net/http's
// server then reads the connection itself (what is left of the body, the
// next request), and a read of the body that outlived the handler (the
// upstream Transport's, when the upstream answered before it took the
// whole body) would race with it. handlerDone waits for a read in
// progress, bounded by its deadline; later reads fail.
type timedBody struct {
	io.ReadCloser
	rc          *http.ResponseController
	h1          bool // an HTTP/1 request's: no read outlives the handler
	budget, max time.Duration
	rate        int
	err         error       // sticky, once out of time
	late        atomic.Bool // read by bodyErrors, on another goroutine
	client      clientBody  // read by upstreamError, on another goroutine

	// The upstream Transport may still read the body on its own goroutine
	// after the handler returned (an upstream that answered early), when
	// the ResponseWriter, and so rc, must no longer be used.
	mu      sync.Mutex
	done    bool          // the handler returned
	reading bool          // a read is in progress
	idle    chan struct{} // closed when that read returns, for handlerDone
}

// errBodyAfterHandler is what a read of an HTTP/1 request body returns
// once its handler has returned.
var errBodyAfterHandler = errors.New("request body read after its handler returned")

// handlerDone is called when the handler returns: from then on Read sets
// no deadline, and over HTTP/1 it fails. It waits for an HTTP/1 read in
// progress to return, then closes the body, which reads what is left of
// it (up to net/http's limit) to keep the connection, within BodyTimeout.
// It does so before the handler returns: a full-duplex request's body
// closed by net/http's server after it may start the connection's
// background read while the server reads the next request
// (golang.org/issue/68560).
func (b *timedBody) handlerDone() {
	b.mu.Lock()
	b.done = true
	var idle chan struct{}
	if b.h1 && b.reading {
		idle = make(chan struct{})
		b.idle = idle
	}
	b.mu.Unlock()
	if idle != nil {
		<-idle
	}
	if b.h1 {
		b.rc.SetReadDeadline(time.Now().Add(b.max))
		b.ReadCloser.Close()
	}
}

// begin starts a read under deadline d: false when it may not start.
func (b *timedBody) begin(d time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return !b.h1
	}
	b.rc.SetReadDeadline(d)
	b.reading = true
	return true
}

// end ends a read begun by begin.
func (b *timedBody) end() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reading = false
	if b.done {
		if b.idle != nil {
			close(b.idle)
			b.idle = nil
		}
		return
	}
	// Cleared at once, so that the deadline never fires while the
	// upstream, not the client, is slow (or, on HTTP/1.1, on the read
	// net/http starts after the body).
	b.rc.SetReadDeadline(time.Time{})
}

func (b *timedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	start := time.Now()
	if !b.begin(start.Add(b.budget)) {
		return 0, errBodyAfterHandler
	}
	n, err := b.ReadCloser.Read(p)
	b.end()
	b.budget = min(b.max, b.budget-time.Since(start)+time.Duration(n)*time.Second/time.Duration(b.rate))
	b.client.note(err)
	switch {
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		b.fail()
		return n, b.err
	case err == nil && b.budget <= 0:
		b.fail()
	}
	return n, err
}

func (b *timedBody) fail() {
	b.err = errBodyTimeout
	b.late.Store(true)
}

type bodyKey struct{}

// timedOut reports whether the body ran out of time.
func (b *timedBody) timedOut() bool { return b.late.Load() }

// bodyErrors makes the upstream error handler answer 408 when the request
// body ran out of time, whatever error that caused upstream.
func (p *Proxy) bodyErrors(next func(http.ResponseWriter, *http.Request, error)) func(http.ResponseWriter, *http.Request, error) {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		b, _ := r.Context().Value(bodyKey{}).(*timedBody)
		if b == nil || !b.timedOut() {
			next(w, r, err)
			return
		}
		if rec, ok := w.(*recorder); ok {
			rec.reason = ReasonBodyTimeout
		}
		if r.ProtoMajor == 1 {
			// The rest of the body is still on its way: don't read it.
			w.Header().Set("Connection", "close")
		}
		http.Error(w, "request body too slow", http.StatusRequestTimeout)
	}
}

// timedWriter bounds each write of an HTTP/2 response to WriteTimeout: a
// client that stops opening its flow-control window, while it still reads
// the connection, would otherwise hold the stream (and its upstream
// request) forever. The deadline is cleared after each write, so that a
// response that pauses (server-sent events) is not cut.
type timedWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *timedWriter) Write(b []byte) (int, error) {
	w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	n, err := w.ResponseWriter.Write(b)
	w.rc.SetWriteDeadline(time.Time{})
	return n, err
}

// FlushError flushes under the same deadline as Write; ResponseController
// (which ReverseProxy flushes through) finds it before it unwraps.
func (w *timedWriter) FlushError() error {
	w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	err := w.rc.Flush()
	w.rc.SetWriteDeadline(time.Time{})
	return err
}

func (w *timedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
