package fastocsp

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"time"

	"github.com/valyala/fasthttp"

	"minica/serve/internal/connlimit"
	"minica/serve/internal/httpreply"
)

// Responder answers one OCSP request into a (see ocsp.Responder.Answer):
// method, the unescaped path, the body of a POST (bodyErr when it could
// not be read whole) and the If-None-Match values.
type Responder interface {
	Answer(a *httpreply.Reply, method, path string, body []byte, bodyErr error, inm []string)
}

// Limits are the bounds of the listener, those of serve's main listeners.
type Limits struct {
	MaxConns       int // connections open at once (the Listener's bound)
	MaxHeaderBytes int
	MaxBody        int // of a POST: ocsp.MaxRequest
	ReadTimeout    time.Duration
	WriteTimeout   time.Duration
	IdleTimeout    time.Duration
}

// errBodySize is the body error a POST beyond Limits.MaxBody gets.
var errBodySize = errors.New("OCSP request body larger than the bound")

// NewServer returns the fasthttp server of r within lim. isOCSP routes a
// request (method, path) to the responder; count receives each request's
// outcome: whether it was an OCSP request (else: another path) and its
// status. Serve it on Listener(l) for a connlimit.Listener l.
func NewServer(r Responder, lim Limits, isOCSP func(method, path string) bool, count func(ocsp bool, status int)) *fasthttp.Server {
	return &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			if t := trackedOf(ctx.Conn()); t != nil {
				t.Begin()
				defer t.End()
			}
			count(serveFast(ctx, r, isOCSP))
		},
		ErrorHandler: func(ctx *fasthttp.RequestCtx, err error) {
			var small *fasthttp.ErrSmallBuffer
			switch {
			case errors.Is(err, fasthttp.ErrBodyTooLarge):
				// As ServeHTTP answers a body beyond MaxBody.
				var a httpreply.Reply
				r.Answer(&a, http.MethodPost, "/", nil, errBodySize, nil)
				ctx.Response.Header.SetCanonical(nosniffName, nosniff)
				writeFast(ctx, &a)
				ctx.SetConnectionClose()
				count(true, a.Status)
			case errors.As(err, &small):
				// net/http's answer to headers beyond MaxHeaderBytes.
				refuse(ctx, http.StatusRequestHeaderFieldsTooLarge, "431 Request Header Fields Too Large", false)
			default:
				refuse(ctx, http.StatusBadRequest, "400 Bad Request", false)
			}
		},
		// net/http reads MaxHeaderBytes plus 4096 bytes of slack.
		ReadBufferSize:     lim.MaxHeaderBytes + 4096,
		MaxRequestBodySize: lim.MaxBody,
		ReadTimeout:        lim.ReadTimeout,
		WriteTimeout:       lim.WriteTimeout,
		IdleTimeout:        lim.IdleTimeout,
		// The listener bounds the connections (MaxConns); fasthttp's own
		// bound must leave room for the ones it evicted, whose workers
		// still run until their read returns, or fasthttp answers 503 to
		// the client they were evicted for. A flood evicts up to twice
		// MaxConns before those workers run on a busy machine: room for
		// four times MaxConns.
		Concurrency:           4 * lim.MaxConns,
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		// The handler never reads RequestCtx.Time: no clock read for it.
		LazyRequestTime: true,
		Logger:          discard{},
	}
}

// discard is a fasthttp.Logger that logs nothing.
type discard struct{}

func (discard) Printf(string, ...any) {}

// serveFast answers one request and returns whether it was an OCSP
// request, and its status.
func serveFast(ctx *fasthttp.RequestCtx, r Responder, isOCSP func(method, path string) bool) (bool, int) {
	ctx.Response.Header.SetCanonical(nosniffName, nosniff)
	method := http.MethodPost
	switch {
	case ctx.IsPost():
	case ctx.IsGet():
		method = http.MethodGet
	case ctx.IsHead():
		method = http.MethodHead
	default:
		method = string(ctx.Method())
	}
	path, ok := requestPath(ctx.Request.Header.RequestURI())
	if !ok {
		refuse(ctx, http.StatusBadRequest, "bad request: the request target is not a path", true)
		return false, http.StatusBadRequest
	}
	if path == "/" && method != http.MethodPost {
		// "/" is the responder's POST target (`openssl ocsp -url
		// http://HOST:PORT`), nothing else: another method is 405.
		refuse(ctx, http.StatusMethodNotAllowed, "method not allowed: OCSP at / takes POST", true)
		ctx.Response.Header.Set("Allow", http.MethodPost)
		return true, http.StatusMethodNotAllowed
	}
	if !isOCSP(method, path) {
		refuse(ctx, http.StatusNotFound, "not found: this listener answers OCSP only", true)
		return false, http.StatusNotFound
	}
	var inm []string
	if method != http.MethodPost {
		for _, v := range ctx.Request.Header.PeekAll("If-None-Match") {
			inm = append(inm, string(v))
		}
	}
	var a httpreply.Reply
	r.Answer(&a, method, path, ctx.PostBody(), nil, inm)
	writeFast(ctx, &a)
	return true, a.Status
}

// refuse answers code with msg as plain text, as serve's main listeners
// refuse a path (with no-store), or as net/http refuses a request it
// cannot read (without it); nosniff either way.
func refuse(ctx *fasthttp.RequestCtx, code int, msg string, noStore bool) {
	ctx.Response.Reset()
	h := &ctx.Response.Header
	h.SetCanonical(nosniffName, nosniff)
	if noStore {
		h.Set("Cache-Control", "no-store")
	}
	h.SetContentType("text/plain; charset=utf-8")
	ctx.SetStatusCode(code)
	ctx.SetBodyString(msg + "\n")
}

// The X-Content-Type-Options field of every answer, in the form
// ResponseHeader.SetCanonical takes.
var nosniffName, nosniff = []byte("X-Content-Type-Options"), []byte("nosniff")

// requestPath returns the unescaped path of a request target, as net/http
// has it in URL.Path; the targets of `openssl ocsp` are taken as they are.
func requestPath(uri []byte) (string, bool) {
	switch string(uri) {
	case "/":
		return "/", true
	case "/ocsp":
		return "/ocsp", true
	}
	u, err := url.ParseRequestURI(string(uri))
	if err != nil {
		return "", false
	}
	return u.Path, true
}

// writeFast writes a onto the fasthttp response. The names of a Reply's
// fields are in canonical form already, so fasthttp is told not to
// normalise them again; Content-Length and Date it writes itself (the
// length from the body, Date from its clock of the current second).
func writeFast(ctx *fasthttp.RequestCtx, a *httpreply.Reply) {
	h := &ctx.Response.Header
	h.DisableNormalizing()
	ctx.SetStatusCode(a.Status)
	for _, f := range a.Fields() {
		switch f.Name {
		case "Content-Length":
		case "Content-Type":
			h.SetContentType(f.Values[0])
		default:
			h.Set(f.Name, f.Values[0])
		}
	}
	ctx.Response.SetBodyRaw(a.Body)
}

// Listener returns l, whose connections yield before the first read after
// a write (see the package doc): the listener to serve NewServer's server
// on.
func Listener(l *connlimit.Listener) net.Listener { return fastListener{l} }

// fastListener hands out the connections of a connlimit.Listener as
// fastConns.
type fastListener struct{ *connlimit.Listener }

func (l fastListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &fastConn{Conn: c.(*connlimit.Conn)}, nil
}

// fastConn is a connection of the dedicated listener: it yields before the
// first read that follows a write (see the package doc). fasthttp reads and writes a connection from one goroutine.
type fastConn struct {
	*connlimit.Conn
	wrote bool
}

func (c *fastConn) Write(p []byte) (int, error) {
	c.wrote = true
	return c.Conn.Write(p)
}

func (c *fastConn) Read(p []byte) (int, error) {
	if c.wrote {
		c.wrote = false
		runtime.Gosched()
	}
	return c.Conn.Read(p)
}

// trackedOf returns the connlimit.Conn under a connection of the
// dedicated listener, or nil for another connection.
func trackedOf(c net.Conn) *connlimit.Conn {
	if f, ok := c.(*fastConn); ok {
		return f.Conn
	}
	return nil
}
