//go:build stdocsp

package serve

import (
	"net"

	"minica/serve/ocsp"
)

// ocspFrontFast tells the tests which HTTP server the dedicated OCSP
// listener runs: net/http, here (the build tag stdocsp).
const ocspFrontFast = false

// serveOCSPFront serves the dedicated OCSP listener on net/http.
func (s *Server) serveOCSPFront(ln net.Listener, r *ocsp.Responder) error {
	return s.serveOCSPStd(ln, r)
}
