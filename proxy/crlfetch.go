package proxy

import (
	"errors"
	"time"

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

// ReloadFailure returns the failure of part file in err, an error of
// Reload, or nil when that part loaded.
func ReloadFailure(err error, file string) error {
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

// CRLRefusalReason names why a CRL was refused, from the error of the CRL
// part of a Reload (see ReloadFailure): one of revoke's Refusal constants,
// by revoke.RefusalReason, the proxy's own wording of a refusal of
// revoke.MayReplace included.
func CRLRefusalReason(err error) string {
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

// CRLFetchFailed records a failed fetch of the CRL from its URL, by a
// caller that follows one (LoadCRL then keeps returning the last good
// CRL): a crl-fetch-failed line and minica_proxy_crl_fetch_failures_total.
func (p *Proxy) CRLFetchFailed(reason string, err error) {
	p.metrics.fetchFailed(reason)
	p.log.line("crl-fetch-failed", "reason", reason, "error", err.Error())
}

// CRLFetched records a good fetch of the CRL from its URL at at: a new
// CRL taken, or the server's word that the one in use is current. It is
// minica_proxy_crl_last_fetch_success_seconds.
func (p *Proxy) CRLFetched(at time.Time) {
	p.metrics.lastFetch.Store(at.UnixNano())
}
