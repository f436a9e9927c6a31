package proxy

import (
	"context"
	"errors"
	"time"

	"minica/crlsource"
	"minica/revoke"
)

// ReloadError is the failure of one part of a Reload: File is "ca", "crl"
// or "cert". The error of Reload joins them.
type ReloadError struct {
	File string
	Err  error
}

func (e *ReloadError) Error() string { return e.Err.Error() }

func (e *ReloadError) Unwrap() error { return e.Err }

// reloadFailure returns the failure of part file in err, an error of
// Reload, or nil when that part loaded.
func reloadFailure(err error, file string) error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else if err != nil {
		errs = []error{err}
	}
	for _, e := range errs {
		var re *ReloadError
		if errors.As(e, &re) && re.File == file {
			return re
		}
	}
	return nil
}

// crlRefusalReason names why a CRL was refused, from the error of the CRL
// part of a Reload (see reloadFailure): one of revoke's Refusal constants,
// by revoke.RefusalReason, the proxy's own wording of a refusal of
// revoke.MayReplace included.
func crlRefusalReason(err error) string {
	switch {
	case errors.Is(err, ErrCRLOlder):
		return revoke.RefusalOlder
	case errors.Is(err, ErrCRLFuture):
		return revoke.RefusalFuture
	case errors.Is(err, ErrCRLExpired):
		return revoke.RefusalExpired
	}
	return revoke.RefusalReason(err)
}

// followCRL follows f, the CRL source, until ctx is done or the function
// it returns is called, which waits for the follower to stop.
func (p *Proxy) followCRL(ctx context.Context, f crlsource.Followed) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Follow(ctx, crlSink{p})
	}()
	return func() {
		cancel()
		<-done
	}
}

// crlSink is the proxy as the sink of its followed CRL source: a new CRL
// is reloaded at once, through the checks of any CRL, and the fetches are
// logged and counted.
type crlSink struct{ p *Proxy }

// Changed reloads; a refused CRL is a *crlsource.Refusal with its reason.
func (s crlSink) Changed() error {
	if err := reloadFailure(s.p.Reload(), "crl"); err != nil {
		return &crlsource.Refusal{Reason: crlRefusalReason(err), Err: err}
	}
	return nil
}

// Base is the number of the complete CRL in use, the base of the delta
// CRLs the proxy takes (crlsource.DeltaSink), "" when it holds the CRLs of
// several CAs.
func (s crlSink) Base() string { return s.p.trust.Load().completeNumber() }

// FetchFailed records a failed fetch, or a CRL refused: a crl-fetch-failed
// line and minica_proxy_crl_fetch_failures_total. The CRL in use stays.
func (s crlSink) FetchFailed(reason string, err error) {
	s.p.metrics.fetchFailed(reason)
	s.p.log.line("crl-fetch-failed", "reason", reason, "error", err.Error())
}

// Fetched records a good fetch at at: a new CRL taken, or the server's
// word that the one in use is current. It is
// minica_proxy_crl_last_fetch_success_seconds.
func (s crlSink) Fetched(at time.Time) {
	s.p.metrics.lastFetch.Store(at.UnixNano())
}
