// Package fastocsp is the HTTP server of serve's dedicated OCSP listener
// (serve --listen-ocsp): the same answers as the OCSP endpoint of the main
// listeners, from the same responder (a [Responder]: ocsp.Responder's
// Answer), carried by github.com/valyala/fasthttp instead of net/http,
// whose allocations and goroutine hand-offs per request cost more than a
// cached answer. Only plain HTTP: an OCSP response is signed, so it needs
// no channel security (RFC 5019 section 5 has OCSP over HTTP).
//
// It is a hand-written twin of a standard path, kept because a paired A/B
// run shows it saves well over 5% of serve's CPU per answer on that
// listener (docs/performance.md, "OCSP"). The build tag
// stdocsp switches serve back to net/http for this listener, and the
// listener's tests with it; the answers of the two are compared byte for
// byte (serve's TestOCSPListenersAnswerAlike, and the ocsp package's tests
// run on both front ends).
//
// The listener keeps the limits of the main ones ([Limits]): the
// connections of package connlimit (the oldest not in a request is closed
// to make room), request headers of MaxHeaderBytes, a request read within
// ReadTimeout (headers and body: a slowloris client is cut off),
// IdleTimeout between keep-alive requests, bodies of MaxBody.
//
// fasthttp reads the next request on a kept connection as soon as it has
// written an answer, before the client can have sent it: that read finds
// nothing (EAGAIN), the goroutine parks on the poller, and it reads again
// once woken, three system calls and a trip through the poller for an
// exchange that needs two. So a connection of this listener yields the
// processor before that read (fastConn): the other connections' requests
// are answered meanwhile, and the next request has usually come by the
// time the goroutine runs again. With nothing else to run, the yield
// returns at once.
package fastocsp
