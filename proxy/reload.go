package proxy

import (
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"time"

	"minica/revoke"
)

// Reload re-reads the CA bundle, the CRL and the server certificate. Each
// part that loads and checks out replaces the current one for the next
// handshakes and the next request of open connections; a part that fails
// (unreadable, corrupt, wrong signer, lower CRL number, future thisUpdate)
// keeps the last good one, is logged and counted. The error joins the
// failures, each a *ReloadError (see reloadFailure), nil if none.
func (p *Proxy) Reload() error {
	p.reloadMu.Lock()
	defer p.reloadMu.Unlock()
	old := p.trust.Load()
	next := *old
	changed := false
	var errs []error
	fail := func(file string, err error) {
		p.metrics.reloadFailed(file)
		p.log.line("reload-failed", "file", file, "error", err.Error())
		errs = append(errs, &ReloadError{File: file, Err: err})
	}
	if cas, roots, err := loadCA(&p.cfg); err != nil {
		fail("ca", err)
	} else if !sameCerts(cas, old.cas) {
		next.setCAs(cas, roots)
		changed = true
	}
	crl, err := loadCRL(&p.cfg, next.cas, old, p.cfg.Now())
	switch {
	case err != nil:
		fail("crl", err)
		// Never check clients of a new bundle against a CRL whose issuer
		// left it: keep the old bundle until a matching CRL comes.
		if !crlIssuersIn(old.crls, next.cas) {
			fail("ca", ErrCRLIssuerGone)
			next.setCAs(old.cas, old.roots)
			changed = false
		}
	case crl.sum != old.crlSum || !slices.Equal(crl.crls, old.crls):
		next.setCRLs(crl)
		changed = true
	}
	p.reloadPolicy(next.cas, fail)
	if err := p.cert.Reload(); err != nil {
		fail("cert", err)
	}
	if changed {
		next.gen = old.gen + 1
		p.log.line("reload", "crl_number", next.crl.Number().String())
	}
	p.storeTrust(&next)
	// Open tunnels and streams of clients refused now are closed, changed
	// files or not: a certificate or the CRL may have expired since.
	p.sweep()
	p.exchanges.poke()
	releaseRead(&p.cfg, crl)
	return errors.Join(errs...)
}

func sameCerts(a, b []*x509.Certificate) bool {
	return slices.EqualFunc(a, b, func(x, y *x509.Certificate) bool { return x.Equal(y) })
}

// warnCRL logs, at most once a minute, that the CRL is past nextUpdate:
// a warning within CRLGrace, an error (every client refused) beyond it.
func (p *Proxy) warnCRL(now time.Time) {
	t := p.trust.Load()
	st := crlState(t.crl, p.cfg.CRLGrace, now)
	if st != revoke.Grace && st != revoke.Expired {
		return
	}
	last := p.lastWarn.Load()
	if now.Unix()-last < 60 || !p.lastWarn.CompareAndSwap(last, now.Unix()) {
		return
	}
	next := t.crl.NextUpdate().UTC().Format(time.RFC3339)
	// An empty hint is left out of the line.
	if st == revoke.Grace {
		p.log.line("crl-grace-warning", "msg", "CRL is past its nextUpdate; accepting clients within the grace period",
			"next_update", next, "grace_until", t.crl.NextUpdate().Add(p.cfg.CRLGrace).UTC().Format(time.RFC3339), "hint", p.cfg.CRLExpiredHint)
		return
	}
	p.log.line("crl-expired-error", "msg", "CRL is past its nextUpdate; refusing every client until a fresh CRL is loaded", "next_update", next, "hint", p.cfg.CRLExpiredHint)
}

func (p *Proxy) refusedHandshake(remote net.Addr, err error) {
	reason, ve := handshakeReason(err, p.cfg.Now())
	p.metrics.handshakeFailed(reason)
	p.log.handshake(remote, reason, ve, err)
}

// HealthHandler answers 200 "ok" while clients can be verified, and 503 with
// the reason when they cannot (CRL past nextUpdate beyond CRLGrace, or the
// clock before its thisUpdate), by revoke.Freshness. Within the grace
// period it answers 200 with a warning.
func (p *Proxy) HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := p.cfg.Now()
		t := p.trust.Load()
		next := t.crl.NextUpdate().UTC().Format(time.RFC3339)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		switch crlState(t.crl, p.cfg.CRLGrace, now) {
		case revoke.Expired:
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "unavailable: CRL expired at "+next+"\n")
		case revoke.NotYetValid:
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "unavailable: CRL not valid before "+t.crl.ThisUpdate().UTC().Format(time.RFC3339)+"\n")
		case revoke.Grace:
			io.WriteString(w, "ok: warning: CRL expired at "+next+", accepted during the grace period\n")
		default:
			io.WriteString(w, "ok\n")
		}
	})
}
