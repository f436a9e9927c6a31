package serve

import (
	"errors"
	"net"
	"net/http"

	"minica/serve/ocsp"
)

// ServeOCSP serves the OCSP responder of the Config (an *ocsp.Responder)
// alone on ln, over plain HTTP, until Shutdown: POST at /, /ocsp and the
// path of OCSPURL, the RFC 5019 GET form, 405 for another method at /, 404
// for any other path. Requests are counted in the metrics of the Server
// under the endpoint "ocsp" (any other path as "other"), and the limits
// of the Config hold as on the main listeners. The HTTP server is
// fasthttp (package serve/internal/fastocsp), or net/http when serve is
// built with the tag stdocsp.
func (s *Server) ServeOCSP(ln net.Listener) error {
	r, ok := s.cfg.OCSP.(*ocsp.Responder)
	if !ok {
		ln.Close()
		return errors.New("serving OCSP: the server has no OCSP responder")
	}
	return s.serveOCSPFront(ln, r)
}

// serveOCSPStd serves the dedicated OCSP listener on net/http, as the main
// listeners are served: the standard path of ServeOCSP.
func (s *Server) serveOCSPStd(ln net.Listener, r *ocsp.Responder) error {
	return s.serve(ln, nil, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		sw.Header()["X-Content-Type-Options"] = hdrNosniff
		ep := epOCSP
		switch {
		case req.URL.Path == "/" && req.Method != http.MethodPost:
			// "/" is the responder's POST target (`openssl ocsp -url
			// http://HOST:PORT`), nothing else: another method is 405.
			sw.Header().Set("Allow", http.MethodPost)
			plain(sw, http.StatusMethodNotAllowed, "method not allowed: OCSP at / takes POST")
		case s.isOCSP(req.Method, req.URL.Path):
			r.ServeHTTP(sw, req)
		default:
			ep = epOther
			plain(sw, http.StatusNotFound, "not found: this listener answers OCSP only")
		}
		s.m.request(ep, sw.status)
	}))
}
