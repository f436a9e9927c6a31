package serve

// The dedicated OCSP listener (serve --listen-ocsp): the same answers as
// the OCSP endpoint of the main listeners, from the same OCSPResponder
// (answer), carried by github.com/valyala/fasthttp instead of net/http. A
// cached OCSP answer costs the responder about a microsecond; through
// net/http the request costs ten times that in allocations and
// goroutine hand-offs, which fasthttp's reused buffers and worker pool
// avoid. Only plain HTTP: an OCSP response is signed, so it needs no
// channel security (RFC 5019 section 5 has OCSP over HTTP), and a TLS
// handshake would cost more than the answer.
//
// The listener keeps the limits of the main ones: the connections of
// package connlimit (the oldest not in a request is closed to make room),
// request headers of MaxHeaderBytes, a request read within
// ReadHeaderTimeout (headers and body: a slowloris client is cut off),
// IdleTimeout between keep-alive requests, bodies of MaxOCSPRequest.
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

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"runtime"

	"github.com/valyala/fasthttp"

	"minica/serve/internal/connlimit"
)

// ServeOCSP serves the OCSP responder of the Config (an *OCSPResponder)
// alone on ln, over plain HTTP, until Shutdown. Requests are counted in
// the metrics of the Server under the endpoint "ocsp" (any other path
// gets 404, counted as "other").
func (s *Server) ServeOCSP(ln net.Listener) error {
	r, ok := s.cfg.OCSP.(*OCSPResponder)
	if !ok {
		ln.Close()
		return errors.New("serving OCSP: the server has no OCSP responder")
	}
	lim := connlimit.NewListener(ln, s.cfg.MaxConns, &s.m.conns)
	srv := r.fastServer(s.cfg, s.isOCSP, s.m.request)
	if !s.register(ln, srv.ShutdownWithContext) {
		return nil
	}
	return srv.Serve(fastListener{lim})
}

// fastServer returns the fasthttp server of the responder, within the
// limits of cfg (defaults set). isOCSP routes a request (method, path) to
// the responder; count receives each request's endpoint and status.
func (r *OCSPResponder) fastServer(cfg Config, isOCSP func(method, path string) bool, count func(ep string, status int)) *fasthttp.Server {
	return &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			if t := trackedOf(ctx.Conn()); t != nil {
				t.Begin()
				defer t.End()
			}
			ep, status := r.serveFast(ctx, isOCSP)
			count(ep, status)
		},
		ErrorHandler: func(ctx *fasthttp.RequestCtx, err error) {
			var small *fasthttp.ErrSmallBuffer
			switch {
			case errors.Is(err, fasthttp.ErrBodyTooLarge):
				// As ServeHTTP answers a body beyond MaxOCSPRequest.
				var a ocspReply
				r.answer(&a, http.MethodPost, "/", nil, errOCSPBodySize, nil)
				ctx.Response.Header.SetCanonical(fastNosniffName, fastNosniff)
				writeFast(ctx, &a)
				ctx.SetConnectionClose()
				count(epOCSP, a.status)
			case errors.As(err, &small):
				// net/http's answer to headers beyond MaxHeaderBytes.
				fastRefuse(ctx, http.StatusRequestHeaderFieldsTooLarge, "431 Request Header Fields Too Large", false)
			default:
				fastRefuse(ctx, http.StatusBadRequest, "400 Bad Request", false)
			}
		},
		// net/http reads MaxHeaderBytes plus 4096 bytes of slack.
		ReadBufferSize:     cfg.MaxHeaderBytes + 4096,
		MaxRequestBodySize: MaxOCSPRequest,
		ReadTimeout:        cfg.ReadHeaderTimeout,
		WriteTimeout:       cfg.MaxWait + writeSlack,
		IdleTimeout:        cfg.IdleTimeout,
		// The listener bounds the connections (MaxConns); fasthttp's own
		// bound must leave room for the ones it evicted, whose workers
		// still run until their read returns, or fasthttp answers 503 to
		// the client they were evicted for.
		Concurrency:           2 * cfg.MaxConns,
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		// The handler never reads RequestCtx.Time: no clock read for it.
		LazyRequestTime: true,
		Logger:          discardLog,
	}
}

// serveFast answers one request and returns its endpoint and status.
func (r *OCSPResponder) serveFast(ctx *fasthttp.RequestCtx, isOCSP func(method, path string) bool) (string, int) {
	ctx.Response.Header.SetCanonical(fastNosniffName, fastNosniff)
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
		fastRefuse(ctx, http.StatusBadRequest, "bad request: the request target is not a path", true)
		return epOther, http.StatusBadRequest
	}
	if path == "/" && method != http.MethodPost {
		// "/" is the responder's POST target (`openssl ocsp -url
		// http://HOST:PORT`), nothing else: another method is 405.
		fastRefuse(ctx, http.StatusMethodNotAllowed, "method not allowed: OCSP at / takes POST", true)
		ctx.Response.Header.Set("Allow", http.MethodPost)
		return epOCSP, http.StatusMethodNotAllowed
	}
	if !isOCSP(method, path) {
		fastRefuse(ctx, http.StatusNotFound, "not found: this listener answers OCSP only", true)
		return epOther, http.StatusNotFound
	}
	var inm []string
	if method != http.MethodPost {
		for _, v := range ctx.Request.Header.PeekAll("If-None-Match") {
			inm = append(inm, string(v))
		}
	}
	var a ocspReply
	r.answer(&a, method, path, ctx.PostBody(), nil, inm)
	writeFast(ctx, &a)
	return epOCSP, a.status
}

// fastRefuse answers code with msg as plain text, as plain does on the
// main listeners (with no-store), or as net/http refuses a request it
// cannot read (without it); nosniff either way.
func fastRefuse(ctx *fasthttp.RequestCtx, code int, msg string, noStore bool) {
	ctx.Response.Reset()
	h := &ctx.Response.Header
	h.SetCanonical(fastNosniffName, fastNosniff)
	if noStore {
		h.Set("Cache-Control", "no-store")
	}
	h.SetContentType("text/plain; charset=utf-8")
	ctx.SetStatusCode(code)
	ctx.SetBodyString(msg + "\n")
}

// The X-Content-Type-Options field of every answer, in the form
// ResponseHeader.SetCanonical takes.
var fastNosniffName, fastNosniff = []byte("X-Content-Type-Options"), []byte(hdrNosniff[0])

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

// writeFast writes a onto the fasthttp response. The names of an
// ocspReply are in canonical form already, so fasthttp is told not to
// normalise them again; Content-Length and Date it writes itself (the
// length from the body, Date from its clock of the current second).
func writeFast(ctx *fasthttp.RequestCtx, a *ocspReply) {
	h := &ctx.Response.Header
	h.DisableNormalizing()
	ctx.SetStatusCode(a.status)
	for _, f := range a.hdr[:a.n] {
		switch f.name {
		case "Content-Length":
		case "Content-Type":
			h.SetContentType(f.vals[0])
		default:
			h.Set(f.name, f.vals[0])
		}
	}
	ctx.Response.SetBodyRaw(a.body)
}

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
// first read that follows a write (see the comment at the top of this
// file). fasthttp reads and writes a connection from one goroutine.
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
