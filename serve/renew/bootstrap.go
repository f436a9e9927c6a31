package renew

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"minica/ca"
	"minica/serve/internal/ratelimit"
)

// TokenPath is the path where a machine trades a bootstrap token and a
// CSR for its first certificate.
const TokenPath = "/bootstrap"

// Defaults of the bound on failed bootstrap tries (Config.TokenRate and
// the others), a minute. A machine that holds its token fails none; a
// guesser gets ten tries a minute from one address and a hundred from all
// together, against 256-bit tokens.
const (
	DefaultTokenRate       = 10
	DefaultTokenBurst      = 10
	DefaultTokenTotalRate  = 100
	DefaultTokenTotalBurst = 100
	// maxTokenAddrs bounds the per-address table of failed tries.
	maxTokenAddrs = 10_000
)

// Reasons of a refused bootstrap, besides those it shares with renewal
// (https-required, method-not-allowed, bad-csr, too-large,
// unsupported-media-type, rate-limited, busy, signer-unavailable,
// internal-error).
const (
	RefuseTokenRequired  = "token-required"
	RefuseQuery          = "query-not-allowed"
	RefuseUnknownToken   = "unknown-token"
	RefuseTokenUsed      = "token-used"
	RefuseTokenCancelled = "token-cancelled"
	RefuseTokenExpired   = "token-expired"
	RefuseTokenFailed    = "token-failed"
	RefuseBootstrapOff   = "bootstrap-disabled"
	RefuseNameTaken      = "name-taken"
)

// bootMetrics counts bootstraps and their refusals.
type bootMetrics struct {
	issued  atomic.Uint64
	refused sync.Map // reason -> *atomic.Uint64
}

// serveBootstrap answers POST /bootstrap: the token in the Authorization
// header (never in the URL or the body, never logged or echoed), a CSR in
// the body, the certificate and the chain out.
func (rn *Renewer) serveBootstrap(w http.ResponseWriter, r *http.Request) {
	res, e, err := rn.bootstrap(w, r)
	if err != nil {
		var ref *refusal
		if !errors.As(err, &ref) {
			ref = rn.failure(err)
			if e != nil && e.Status == ca.EnrollFailed {
				// The token was burnt before the signature failed: a retry
				// would only be told so.
				ref.retryAfter = 0
				ref.detail += "; the token is spent: ask the CA's operator for a new one"
			}
		}
		kv := []string{"reason", ref.reason, "status", strconv.Itoa(ref.status), "client", r.RemoteAddr, "detail", ref.detail}
		if e != nil { // the token matched: its ID and name are safe to log
			kv = append(kv, "id", e.ID, "name", e.Name)
		}
		rn.log.Event("bootstrap-refused", kv...)
		countIn(&rn.boot.refused, ref.reason)
		writeProblem(w, ref)
		return
	}
	rn.boot.issued.Add(1)
	rn.log.Event("bootstrapped", "name", res.Record.Name, "serial", res.Record.Serial, "id", e.ID,
		"profile", string(res.Record.Profile), "not_after", rfc3339(res.Cert.NotAfter), "client", r.RemoteAddr)
	rn.writeChain(w, ChainType, nil, res.Cert)
}

// bootstrap checks one bootstrap request and redeems its token. It returns
// the token's enrollment whenever the token matched one.
//
// Only failed tries count against the source address (and the total): a
// token that matches nothing, or one that is spent. A try takes its place
// before the token is looked up, so that concurrent guesses are bounded
// too, and gives it back when it turns out not to be a failed try (issued,
// a bad body, the CA busy).
func (rn *Renewer) bootstrap(w http.ResponseWriter, r *http.Request) (*ca.Issued, *ca.Enrollment, error) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		return nil, nil, refuse(http.StatusMethodNotAllowed, RefuseMethod, "bootstrap is POST only")
	}
	if r.TLS == nil {
		return nil, nil, refuse(http.StatusForbidden, RefuseHTTPS, "bootstrap needs serve's HTTPS listener (--listen-tls): the token must not cross the network in the clear")
	}
	if r.URL.RawQuery != "" || r.URL.ForceQuery {
		return nil, nil, refuse(http.StatusBadRequest, RefuseQuery, "%s takes no query: send the token in the Authorization header (Bearer) only", TokenPath)
	}
	token, err := bearerToken(w, r.Header)
	if err != nil {
		return nil, nil, err
	}
	host := ratelimit.Host(r.RemoteAddr)
	key := ratelimit.Key(host)
	if wait, ok := rn.tries.Allow(key, rn.cfg.Now()); !ok {
		ref := refuse(http.StatusTooManyRequests, RefuseRateLimited, "too many failed bootstrap tries from this address: retry in %s", wait.Round(time.Second))
		ref.retryAfter = wait
		return nil, nil, ref
	}
	res, e, err := rn.redeemToken(w, r, token, host)
	if !failedTry(err) {
		rn.tries.Return(key, rn.cfg.Now())
	}
	return res, e, err
}

// redeemToken reads the CSR and, under the CA lock, trades it and token
// for the token's certificate (ca.CA.RedeemToken).
func (rn *Renewer) redeemToken(w http.ResponseWriter, r *http.Request, token, host string) (*ca.Issued, *ca.Enrollment, error) {
	csr, err := rn.readCSR(w, r)
	if err != nil {
		return nil, nil, err
	}
	// RedeemToken burns the token before it signs: while the CA key is
	// known not to sign, keep the token for the client's retry.
	if st, ok := rn.cfg.Signer.(ca.SignerStatus); ok && st.Err() != nil {
		return nil, nil, rn.failure(st.Err())
	}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	unlock, err := rn.cfg.CA.Lock(rn.cfg.LockTimeout)
	if err != nil {
		ref := refuse(http.StatusServiceUnavailable, RefuseBusy, "%v", err)
		ref.retryAfter = 5 * time.Second
		return nil, nil, ref
	}
	defer unlock()
	res, e, err := rn.cfg.CA.RedeemToken(rn.cfg.Signer, token, host, csr)
	if err != nil {
		return nil, e, tokenRefusal(err)
	}
	return res, e, nil
}

// bearerToken returns the bootstrap token of the request's one
// Authorization header, "Bearer TOKEN" (RFC 6750 section 2.1, the scheme
// in any case), or a 401 refusal with WWW-Authenticate. The refusal never
// echoes what was sent.
func bearerToken(w http.ResponseWriter, h http.Header) (string, error) {
	vals := h.Values("Authorization")
	if len(vals) == 0 {
		w.Header().Set("WWW-Authenticate", "Bearer")
		return "", refuse(http.StatusUnauthorized, RefuseTokenRequired, "send the bootstrap token in the header Authorization: Bearer TOKEN")
	}
	scheme, token, _ := strings.Cut(vals[0], " ")
	token = strings.TrimSpace(token)
	if len(vals) > 1 || !strings.EqualFold(scheme, "Bearer") || !ca.ValidToken(token) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		return "", refuse(http.StatusUnauthorized, RefuseTokenRequired,
			"the Authorization header must be one header, Bearer and a bootstrap token (43 base64url characters, as `minica token` prints it)")
	}
	return token, nil
}

// tokenRefusal maps the errors of ca.CA.RedeemToken to refusals.
func tokenRefusal(err error) error {
	var spent *ca.EnrollmentSpentError
	var taken *ca.NameTakenError
	switch {
	case errors.Is(err, ca.ErrEnrollmentUnknown):
		return refuse(http.StatusForbidden, RefuseUnknownToken, "no bootstrap token matches: check that the whole token was sent, or ask the CA's operator for a new one")
	case errors.As(err, &spent):
		return spentRefusal(spent.Enrollment, spent.Status)
	case errors.As(err, &taken):
		return refuse(http.StatusConflict, RefuseNameTaken, "%v; the token is still good: the CA's operator revokes or lets expire that certificate first, then this machine asks again", err)
	case errors.Is(err, ca.ErrTokenCSR):
		return refuse(http.StatusBadRequest, RefuseBadCSR, "%v; the token is still good: send a CSR for this machine's new key that names only the token's names, or none", err)
	case errors.Is(err, ca.ErrLocked):
		ref := refuse(http.StatusServiceUnavailable, RefuseBusy, "%v", err)
		ref.retryAfter = 5 * time.Second
		return ref
	}
	return err
}

// spentRefusal is the refusal of a token that is no longer pending: when
// and from where it was used, never the token.
func spentRefusal(e *ca.Enrollment, st ca.EnrollmentStatus) *refusal {
	switch st {
	case ca.EnrollUsed:
		return refuse(http.StatusForbidden, RefuseTokenUsed, "bootstrap token %s for %q was used at %s from %s, and a token works once: if that was not this machine, tell the CA's operator",
			e.ID, e.Name, rfc3339(e.UsedAt), e.UsedFrom)
	case ca.EnrollCancelled:
		return refuse(http.StatusForbidden, RefuseTokenCancelled, "bootstrap token %s for %q was cancelled at %s: ask the CA's operator for a new one",
			e.ID, e.Name, rfc3339(e.CancelledAt))
	case ca.EnrollExpired:
		return refuse(http.StatusForbidden, RefuseTokenExpired, "bootstrap token %s for %q expired at %s: ask the CA's operator for a new one",
			e.ID, e.Name, rfc3339(e.ExpiresAt))
	}
	return refuse(http.StatusForbidden, RefuseTokenFailed, "bootstrap token %s for %q was used at %s from %s, and issuing the certificate failed: ask the CA's operator for a new one",
		e.ID, e.Name, rfc3339(e.UsedAt), e.UsedFrom)
}

// failedTry reports whether a bootstrap try failed on its token: it
// matched nothing, or a spent token. Only those count against the source
// address.
func failedTry(err error) bool {
	var ref *refusal
	if !errors.As(err, &ref) {
		return false
	}
	switch ref.reason {
	case RefuseUnknownToken, RefuseTokenUsed, RefuseTokenCancelled, RefuseTokenExpired, RefuseTokenFailed:
		return true
	}
	return false
}

// ServeBootstrapDisabled answers a bootstrap request where serve issues
// nothing: 404 with the reason bootstrap-disabled.
func ServeBootstrapDisabled(w http.ResponseWriter, _ *http.Request) {
	writeProblem(w, refuse(http.StatusNotFound, RefuseBootstrapOff,
		"this serve does not trade bootstrap tokens for certificates: it does on its HTTPS listener (--listen-tls) with the CA key, without --no-renew"))
}

// writeBootstrapMetrics appends the bootstrap counters in Prometheus text.
func (rn *Renewer) writeBootstrapMetrics(w io.Writer) {
	fmt.Fprintf(w, "# HELP minica_serve_bootstraps_total First certificates issued for a bootstrap token.\n# TYPE minica_serve_bootstraps_total counter\n")
	fmt.Fprintf(w, "minica_serve_bootstraps_total %d\n", rn.boot.issued.Load())
	fmt.Fprintf(w, "# HELP minica_serve_bootstraps_refused_total Bootstrap tries refused, by reason.\n# TYPE minica_serve_bootstraps_refused_total counter\n")
	rn.boot.refused.Range(func(k, v any) bool {
		fmt.Fprintf(w, "minica_serve_bootstraps_refused_total{reason=%q} %d\n", k, v.(*atomic.Uint64).Load())
		return true
	})
}
