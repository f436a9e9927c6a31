package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
)

// ReasonClientClosed is the reason logged for a request whose client went
// away (it cancelled the request, reset its HTTP/2 stream or closed the
// connection, also in the middle of the request body) before the upstream
// answered. It is neither a refusal nor an upstream error: the request is
// logged and counted with StatusClientClosed, and nothing is sent.
const ReasonClientClosed = "client-closed"

// StatusClientClosed is the status logged and counted for
// ReasonClientClosed: 499, as nginx logs a client that closed its
// request. No client ever sees it.
const StatusClientClosed = 499

// clientClosed reports whether the client of r went away: r's context ends
// with its connection (a failed read of it, the request body's included)
// or, over HTTP/2, its stream; or reading its request body failed, which
// over HTTP/2 comes just before the stream's context ends. The proxy's own
// cuts (a refused client, a body timeout) are told apart before.
func clientClosed(r *http.Request) bool {
	if r == nil {
		return false
	}
	if errors.Is(r.Context().Err(), context.Canceled) {
		return true
	}
	b, _ := r.Context().Value(bodyKey{}).(*timedBody)
	return b != nil && b.client.failed.Load()
}

// clientBody notes, beside a request body, that reading it failed for a
// cause of the client's (its stream reset, its connection closed in the
// middle of the body), not for the end of the body or a deadline.
type clientBody struct {
	failed atomic.Bool
}

// note records the error of a read of the client's body.
func (c *clientBody) note(err error) {
	if err != nil && err != io.EOF && !errors.Is(err, os.ErrDeadlineExceeded) {
		c.failed.Store(true)
	}
}

// abortClientClosed marks rec as a request its client closed and aborts the
// handler: net/http then sends nothing more (over HTTP/1.1 it closes the
// connection, over HTTP/2 it resets the stream, both gone already).
func abortClientClosed(rec *recorder) {
	if rec != nil {
		rec.status = StatusClientClosed
		rec.clientClosed = true
	}
	panic(http.ErrAbortHandler)
}
