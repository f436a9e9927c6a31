// Package h1direct is the proxy's direct way for HTTP/1: a hand-written
// twin of httputil.ReverseProxy with net/http's Transport, for the common
// request, one without a body to a plain http upstream, which it forwards
// on the handler's goroutine with the same semantics and less work.
//
// [Transport] is an http.RoundTripper in front of an *http.Transport: it
// sends what it takes (see [Transport.Takes]) over its own pool of
// kept-alive upstream connections, and hands everything else (a body, an
// upgrade, an https upstream, a platform where it cannot check an idle
// connection) to the Transport behind it. [Transport.Forward] does, for a
// request it takes, what ReverseProxy.ServeHTTP does with a Rewrite that
// sets the proxy's fields, which it asks of a [Rewriter]: the proxy uses
// it instead of ReverseProxy for those requests.
//
// The contract is ReverseProxy's and the Transport's, field for field: the
// hop-by-hop fields and those a Connection field names removed both ways,
// Te: trailers kept, the client's X-Forwarded-* and the proxy's reserved
// names replaced, 1xx answers passed on, trailers announced and copied,
// flushing for a body of unknown length or an event stream, an upstream
// error answered by the ReverseProxy's ErrorHandler, a body cut midway
// aborting the response (http.ErrAbortHandler); the outbound fields
// checked as the Transport checks them, the answer's header bounded by
// MaxResponseHeaderBytes, at most five 1xx answers, a connection reused
// only after its whole answer when nothing more came on it, and a
// replayable request sent again on a new connection when a reused one
// failed before any byte of an answer. The proxy's tests compare the two
// ways (TestDirectAsReverseProxy) and, with MINICA_PROXY_STANDARD=1,
// run everything on the standard way alone; Config.StandardForwarding
// (minica proxy --standard-forwarding) is the switch back for a user.
//
// It stays under the rule for fast twins (docs/performance.md, "The rule
// for fast twins, applied"): net/http's Transport hands each request to
// two goroutines of its connection and back, and ReverseProxy clones each
// request, work that a keep-alive request of the common kind does not
// need.
package h1direct
