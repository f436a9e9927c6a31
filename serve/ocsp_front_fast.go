//go:build !stdocsp

package serve

import (
	"net"

	"minica/serve/internal/connlimit"
	"minica/serve/internal/fastocsp"
	"minica/serve/ocsp"
)

// ocspFrontFast tells the tests which HTTP server the dedicated OCSP
// listener runs: fasthttp, here.
const ocspFrontFast = true

// serveOCSPFront serves the dedicated OCSP listener on fasthttp, within
// the limits of the Config.
func (s *Server) serveOCSPFront(ln net.Listener, r *ocsp.Responder) error {
	lim := connlimit.NewListener(ln, s.cfg.MaxConns, &s.m.conns)
	srv := fastocsp.NewServer(r, fastocsp.Limits{
		MaxConns: s.cfg.MaxConns, MaxHeaderBytes: s.cfg.MaxHeaderBytes, MaxBody: ocsp.MaxRequest,
		ReadTimeout: s.cfg.ReadHeaderTimeout, WriteTimeout: s.cfg.MaxWait + writeSlack, IdleTimeout: s.cfg.IdleTimeout,
	}, s.isOCSP, func(isOCSP bool, status int) {
		if isOCSP {
			s.m.request(epOCSP, status)
		} else {
			s.m.request(epOther, status)
		}
	})
	if !s.register(ln, srv.ShutdownWithContext) {
		return nil
	}
	return srv.Serve(fastocsp.Listener(lim))
}
