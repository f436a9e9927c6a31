package main

import (
	"crypto/tls"
	"io"
	"time"

	"minica/internal/certreload"
)

// serveCertRefresh is how often serve re-reads its HTTPS certificate, so
// that a renewed one (issue server NAME --force, or new --cert files) is
// served without a restart.
const serveCertRefresh = time.Minute

// newServeCert loads serve's HTTPS certificate, to be loaded again once it
// is serveCertRefresh old or after Expire (SIGHUP); a failed load keeps
// the last good certificate and is warned of once. The error of the first
// load is the caller's to report, as serve does not start without it.
func newServeCert(load func() (tls.Certificate, error), now func() time.Time, log io.Writer) (*certreload.Cert, error) {
	return certreload.New(load, certreload.Options{MaxAge: serveCertRefresh, Now: now, Failed: func(err error) {
		warnf(log, "reloading the HTTPS certificate: %v; still serving the previous one", err)
	}})
}
