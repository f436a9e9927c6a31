package main

import (
	"crypto/tls"
	"io"
	"sync"
	"time"
)

// serveCertRefresh is how often serve re-reads its HTTPS certificate, so
// that a renewed one (issue server NAME --force, or new --cert files) is
// served without a restart.
const serveCertRefresh = time.Minute

// certReloader hands out serve's HTTPS certificate, loading it again once
// it is serveCertRefresh old or after force; a failed load keeps the last
// good certificate and is logged once per failure.
type certReloader struct {
	mu      sync.Mutex
	load    func() (tls.Certificate, error)
	now     func() time.Time
	log     io.Writer
	cert    *tls.Certificate
	at      time.Time
	lastErr string
	close   func() // releases what load uses
}

// newCertReloader loads the certificate once; an error is the caller's to
// report, as serve does not start without its certificate.
func newCertReloader(load func() (tls.Certificate, error), now func() time.Time, log io.Writer) (*certReloader, error) {
	cert, err := load()
	if err != nil {
		return nil, err
	}
	return &certReloader{load: load, now: now, log: log, cert: &cert, at: now()}, nil
}

// force makes the next handshake load the certificate again.
func (r *certReloader) force() {
	r.mu.Lock()
	r.at = time.Time{}
	r.mu.Unlock()
}

// get is a tls.Config.GetCertificate.
func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.at) >= serveCertRefresh || now.Before(r.at) {
		r.at = now
		cert, err := r.load()
		switch {
		case err == nil:
			r.cert, r.lastErr = &cert, ""
		case err.Error() != r.lastErr:
			r.lastErr = err.Error()
			warnf(r.log, "reloading the HTTPS certificate: %v; still serving the previous one", err)
		}
	}
	return r.cert, nil
}
