package proxy

import (
	"context"
	"sync"
	"sync/atomic"
)

// upstreamWatch ends the upstream side of an HTTP/1 request of the direct
// way when the request's context ends, as context.AfterFunc does, but
// without one per request: on a keep-alive request that is five
// allocations and about 3% of the proxy's CPU (docs/performance.md,
// "Proxy").
//
// While the handler of an HTTP/1 request runs, nothing but net/http's
// background read uses the client connection, and its context ends only
// after something happens on that connection: the background read
// fails (a timeout of it is an abort of net/http's own and does not
// count), a write to the client fails, or the connection is closed (by
// minica's sweep, which cancels first, or by the server's Close). The
// clientConn tells the watch about each of these, and about a read that
// returns bytes (under TLS they may be a close_notify, which net/http
// takes for the end); from then on context.AfterFunc watches the context
// for the rest of the request. Until then, no AfterFunc is made. So the
// upstream connection is cut exactly when the context ends, and only after
// it has: an error the cut causes is seen with the context's.
//
// One race is left: a close_notify that crypto/tls had read along with the
// request, or that the background read received before the watch began,
// may cancel the context after watch checked it. The upstream exchange
// then goes on until the upstream answers the header (at most
// UpstreamResponseHeaderTimeout), when the context is checked again, or
// until a write to the gone client fails.
type upstreamWatch struct {
	active atomic.Bool // a request is watched: reads tell the watch

	mu   sync.Mutex
	cut  func()          // ends the watched request's upstream connection; nil: no watch
	ctx  context.Context // the watched request's
	stop func() bool     // the AfterFunc that watches ctx from the first event; nil: none yet
	gen  uint64          // counts the watches: a late AfterFunc cuts nothing of a later one
	dead bool            // the connection failed or closed: its context ends, or has
}

// watch runs cut when ctx ends, until unwatch. It returns false, and
// watches nothing, when ctx has ended already.
func (w *upstreamWatch) watch(ctx context.Context, cut func()) bool {
	w.mu.Lock()
	w.cut, w.ctx, w.stop = cut, ctx, nil
	w.gen++
	w.active.Store(true)
	if w.dead {
		w.afterFuncLocked()
	}
	w.mu.Unlock()
	if ctx.Err() != nil {
		w.unwatch()
		return false
	}
	return true
}

// unwatch ends the watch. Like the stop of context.AfterFunc, it returns
// false when cut ran or will run, and when the context has ended (the
// race above: no AfterFunc watched it, but the request's side may have
// cut the connection itself): the upstream connection must not be used
// again.
func (w *upstreamWatch) unwatch() bool {
	w.mu.Lock()
	stop, ctx := w.stop, w.ctx
	w.cut, w.ctx, w.stop = nil, nil, nil
	w.active.Store(false)
	w.mu.Unlock()
	if stop != nil {
		return stop()
	}
	return ctx == nil || ctx.Err() == nil
}

// failed is a read or a write of the client connection that failed, or its
// close: the connection's requests end, the watched one and every later
// one.
func (w *upstreamWatch) failed() {
	w.mu.Lock()
	w.dead = true
	w.afterFuncLocked()
	w.mu.Unlock()
}

// heard is a read of the client connection that returned bytes or timed
// out: whether the request ends is for net/http to say.
func (w *upstreamWatch) heard() {
	w.mu.Lock()
	w.afterFuncLocked()
	w.mu.Unlock()
}

// afterFuncLocked hands the watched request, if there is one, to
// context.AfterFunc; w.mu is held.
func (w *upstreamWatch) afterFuncLocked() {
	if w.cut == nil || w.stop != nil {
		return
	}
	gen := w.gen
	w.stop = context.AfterFunc(w.ctx, func() {
		w.mu.Lock()
		cut := w.cut
		if w.gen != gen {
			cut = nil
		}
		w.mu.Unlock()
		if cut != nil {
			cut()
		}
	})
}
