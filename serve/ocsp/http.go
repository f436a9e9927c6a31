package ocsp

// The HTTP side of an OCSP answer, kept off the allocations and system
// calls that a cached answer does not need: the POST body is read into one
// buffer of its declared length, the read deadline is set once (by the
// Server's connection tracking when the responder is mounted there), and
// the Date header is formatted once a second rather than by net/http for
// every response.

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	xocsp "golang.org/x/crypto/ocsp"

	"minica/serve/internal/connlimit"
)

// defaultBodyTimeout bounds the reading of a POST body when no Server
// bounds it (Responder.bodyTimeout).
const defaultBodyTimeout = 10 * time.Second

var errBodySize = errors.New("OCSP request body larger than MaxRequest")

// readPOST returns the DER request in the body of a POST, of at most
// MaxRequest bytes, read within r.bodyTimeout. Behind a Server the
// deadline is already set: track bounds every request body by the
// Server's ReadHeaderTimeout. A body of a declared length within the
// bound is read into a buffer of that length; a chunked one, or one
// declared too large, goes through http.MaxBytesReader, which also closes
// the connection after the answer to an oversized body.
func (r *Responder) readPOST(w http.ResponseWriter, req *http.Request) ([]byte, error) {
	if _, tracked := connlimit.FromContext(req.Context()); !tracked {
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(r.bodyTimeout))
	}
	if n := req.ContentLength; n > 0 && n <= MaxRequest {
		der := make([]byte, n)
		if _, err := io.ReadFull(req.Body, der); err != nil {
			return nil, err
		}
		return der, nil
	}
	der, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxRequest))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, errBodySize
		}
		return nil, err
	}
	return der, nil
}

// dateCache holds the Date header value of the current second.
type dateCache struct {
	cur atomic.Pointer[dateValue]
}

type dateValue struct {
	sec int64
	v   []string // shared by every response of that second: net/http only reads it
}

// header returns the Date header value for now (RFC 9110 section 6.6.1:
// the time the message was generated, to the second).
func (d *dateCache) header(now time.Time) []string {
	sec := now.Unix()
	if v := d.cur.Load(); v != nil && v.sec == sec {
		return v.v
	}
	v := &dateValue{sec: sec, v: []string{now.UTC().Format(http.TimeFormat)}}
	d.cur.Store(v)
	return v.v
}

// ocspErrorBodies are the unsigned OCSP error responses, by outcome.
var ocspErrorBodies = [numOutcomes][]byte{
	outMalformed:    xocsp.MalformedRequestErrorResponse,
	outUnauthorized: xocsp.UnauthorizedErrorResponse,
	outInternal:     xocsp.InternalErrorErrorResponse,
	outTryLater:     xocsp.TryLaterErrorResponse,
}
