package renew

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"minica/ca"
	"minica/formats"
	"minica/internal/eventlog"
	"minica/revoke"
	"minica/serve/internal/ratelimit"
)

// Paths and media types of the renewal endpoint.
const (
	Path        = "/renew"
	KeygenPath  = "/renew/keygen"
	CSRType     = "application/pkcs10"
	ChainType   = "application/pem-certificate-chain"
	ProblemType = "application/problem+json"
	PEMType     = "application/x-pem-file"
)

// Defaults of Config.
const (
	// DefaultLockTimeout bounds the wait for the CA lock.
	DefaultLockTimeout = 10 * time.Second
	// DefaultMaxCSR bounds a request body: a CSR is under 2 KiB even
	// with an RSA 4096 key and a hundred SANs.
	DefaultMaxCSR = 16 << 10
	// DefaultRate and DefaultBurst bound renewals per second
	// for the whole server: signing is the costly part.
	DefaultRate  = 10
	DefaultBurst = 20
	// DefaultInterval is how soon the same certificate may be
	// renewed again (a client that lost the answer asks again).
	DefaultInterval = time.Minute
)

// Reasons of a refused renewal, besides revoke.VerifyReason values (the
// client certificate's verdict: revoked, expired, unknown-ca, wrong-eku,
// ca-certificate, ...).
const (
	RefuseHTTPS             = "https-required"
	RefuseNoCertificate     = "no-client-certificate"
	RefuseUnknownCert       = "unknown-certificate"
	RefuseNotRenewable      = "not-renewable"
	RefuseIdentity          = "identity-mismatch"
	RefuseKeyUsage          = "key-usage-mismatch"
	RefuseCARequested       = "ca-requested"
	RefuseSameKey           = "same-key"
	RefuseBadCSR            = "bad-csr"
	RefuseMediaType         = "unsupported-media-type"
	RefuseTooLarge          = "too-large"
	RefuseMethod            = "method-not-allowed"
	RefuseKeygenOff         = "keygen-disabled"
	RefuseNoHeldKey         = "no-held-key"
	RefuseOutlivesCA        = "outlives-ca"
	RefuseRateLimited       = "rate-limited"
	RefuseBusy              = "busy"
	RefuseCRLUnusable       = "crl-unusable"
	RefuseInternal          = "internal-error"
	RefuseSignerUnavailable = "signer-unavailable"
	RefuseRenewalOff        = "renewal-disabled"
	RefuseRecentlyRenewed   = "recently-renewed"
)

// Config configures a Renewer. CA, Signer and CRL are required.
type Config struct {
	// CA is a handle of the Renewer's own (requests use it one at a time).
	CA *ca.CA
	// Signer is the CA key.
	Signer crypto.Signer
	// CRL returns the CRL being served (Server.CRL), checked against CA.
	CRL func() *revoke.CRL
	// LockTimeout bounds the wait for the CA lock; 0 means DefaultLockTimeout.
	LockTimeout time.Duration
	// Grace lets a certificate expired for at most this long still
	// renew itself; 0 (the default) allows none.
	Grace time.Duration
	// Keygen allows POST /renew/keygen: serve makes the new key pair (and
	// keeps it in the CA directory, as `minica renew` does) and returns it.
	Keygen bool
	// MaxCSR bounds the request body; 0 means DefaultMaxCSR.
	MaxCSR int64
	// Rate and Burst bound renewals per second (token bucket); Interval
	// is how soon one certificate may be renewed again. 0 means the
	// defaults.
	Rate     float64
	Burst    int
	Interval time.Duration
	// TokenRate and TokenBurst bound the failed bootstrap tries (POST
	// /bootstrap with a token that matches nothing or a spent one) of one
	// source address, an IPv6 /64 counting as one; TokenTotalRate and
	// TokenTotalBurst those of all addresses together. Rates are a
	// minute; 0 means the Default* values.
	TokenRate, TokenBurst           int
	TokenTotalRate, TokenTotalBurst int
	// Log receives one line per renewal, bootstrap and refusal (never a
	// token); nil discards them.
	Log io.Writer
	// Now is the clock; nil means the CA's (CA.Now).
	Now func() time.Time
}

// Renewer is the http.Handler of POST /renew, /renew/keygen and
// /bootstrap; see the package doc. It is safe for concurrent use.
type Renewer struct {
	cfg  Config
	log  *eventlog.Logger
	pool *x509.CertPool

	mu     sync.Mutex // serialises the use of cfg.CA and the limiter
	tokens float64
	filled time.Time

	renewed atomic.Uint64
	refused sync.Map // reason -> *atomic.Uint64

	tries *ratelimit.Limits // failed bootstrap tries
	boot  bootMetrics
}

// New checks cfg and returns a Renewer.
func New(cfg Config) (*Renewer, error) {
	if cfg.CA == nil || cfg.Signer == nil || cfg.CRL == nil {
		return nil, errors.New("creating the renewal handler: the CA, its key and the CRL are required")
	}
	if cfg.Now == nil {
		cfg.Now = cfg.CA.Now
	}
	if cfg.LockTimeout <= 0 {
		cfg.LockTimeout = DefaultLockTimeout
	}
	if cfg.MaxCSR <= 0 {
		cfg.MaxCSR = DefaultMaxCSR
	}
	if cfg.Rate <= 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.TokenRate, DefaultTokenRate)
	def(&cfg.TokenBurst, DefaultTokenBurst)
	def(&cfg.TokenTotalRate, DefaultTokenTotalRate)
	def(&cfg.TokenTotalBurst, DefaultTokenTotalBurst)
	pool := x509.NewCertPool()
	pool.AddCert(cfg.CA.Cert)
	return &Renewer{cfg: cfg, log: eventlog.NewLogger(cfg.Log, cfg.Now), pool: pool,
		tokens: float64(cfg.Burst),
		tries:  ratelimit.New(cfg.TokenRate, cfg.TokenBurst, cfg.TokenTotalRate, cfg.TokenTotalBurst, maxTokenAddrs)}, nil
}

// refusal is a refused renewal: the status, the reason and a sentence.
type refusal struct {
	status         int
	reason, detail string
	retryAfter     time.Duration
}

func (e *refusal) Error() string { return e.reason + ": " + e.detail }

func refuse(status int, reason, format string, args ...any) *refusal {
	return &refusal{status: status, reason: reason, detail: fmt.Sprintf(format, args...)}
}

// signerRetry is the Retry-After of a renewal refused while the CA key
// cannot sign: about the first waits of a token signer's re-opening.
const signerRetry = 5 * time.Second

// failure is the answer to an error the request did not cause: 503
// signer-unavailable while the CA key's token cannot sign (the client
// retries, and the signer opens the token again by itself), else 500.
func (rn *Renewer) failure(err error) *refusal {
	if st, ok := rn.cfg.Signer.(ca.SignerStatus); ok && st.Err() != nil {
		ref := refuse(http.StatusServiceUnavailable, RefuseSignerUnavailable, "the CA key cannot sign now: %v", st.Err())
		ref.retryAfter = signerRetry
		return ref
	}
	return refuse(http.StatusInternalServerError, RefuseInternal, "%v", err)
}

// ServeHTTP answers a renewal or bootstrap request.
func (rn *Renewer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Path == TokenPath {
		rn.serveBootstrap(w, r)
		return
	}
	keygen := r.URL.Path == KeygenPath
	who := r.RemoteAddr
	res, cert, err := rn.handle(w, r, keygen)
	if err != nil {
		var ref *refusal
		if !errors.As(err, &ref) {
			ref = rn.failure(err)
		}
		kv := []string{"reason", ref.reason, "status", strconv.Itoa(ref.status), "client", who, "detail", ref.detail}
		if cert != nil {
			kv = append(kv, "serial", ca.SerialHex(cert.SerialNumber), "subject", subjectOf(cert))
		}
		rn.log.Event("renew-refused", kv...)
		countIn(&rn.refused, ref.reason)
		writeProblem(w, ref)
		return
	}
	rn.renewed.Add(1)
	rn.log.Event("renewed", "name", res.Record.Name, "serial", res.Record.Serial, "old_serial", res.Predecessor.Serial,
		"not_after", rfc3339(res.Cert.NotAfter), "client", who, "subject", subjectOf(cert),
		"keygen", strconv.FormatBool(keygen), "in_grace", strconv.FormatBool(res.Expired))
	if !keygen {
		rn.writeChain(w, ChainType, nil, res.Cert)
		return
	}
	der, err := x509.MarshalPKCS8PrivateKey(res.Key)
	if err != nil {
		writeProblem(w, refuse(http.StatusInternalServerError, RefuseInternal, "encoding the new key: %v", err))
		return
	}
	rn.writeChain(w, PEMType, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), res.Cert)
}

// writeChain answers 200 with ctype: head (a key, or nothing), then leaf
// and the CA's chain in PEM.
func (rn *Renewer) writeChain(w http.ResponseWriter, ctype string, head []byte, leaf *x509.Certificate) {
	body := bytes.NewBuffer(head)
	pem.Encode(body, &pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})
	for _, c := range rn.cfg.CA.Chain {
		pem.Encode(body, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", strconv.Itoa(body.Len()))
	w.WriteHeader(http.StatusOK)
	w.Write(body.Bytes())
}

// handle checks and performs one renewal; it returns the client's
// certificate too (when it sent one), for the log.
func (rn *Renewer) handle(w http.ResponseWriter, r *http.Request, keygen bool) (*ca.Renewed, *x509.Certificate, error) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		return nil, nil, refuse(http.StatusMethodNotAllowed, RefuseMethod, "renewal is POST only")
	}
	if r.TLS == nil {
		return nil, nil, refuse(http.StatusForbidden, RefuseHTTPS, "renewal needs serve's HTTPS listener (--listen-tls) and a client certificate")
	}
	if len(r.TLS.PeerCertificates) == 0 {
		return nil, nil, refuse(http.StatusForbidden, RefuseNoCertificate, "present the certificate to renew as the TLS client certificate")
	}
	cert := r.TLS.PeerCertificates[0]
	if keygen && !rn.cfg.Keygen {
		return nil, cert, refuse(http.StatusForbidden, RefuseKeygenOff, "this serve does not make key pairs (serve --renew-keygen): send a CSR to %s", Path)
	}
	var csr *x509.CertificateRequest
	if !keygen {
		var err error
		if csr, err = rn.readCSR(w, r); err != nil {
			return nil, cert, err
		}
	} else if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, rn.cfg.MaxCSR)); err != nil {
		return nil, cert, refuse(http.StatusRequestEntityTooLarge, RefuseTooLarge, "a keygen request has no body")
	}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	now := rn.cfg.Now()
	rec, inGrace, err := rn.judge(cert, r.TLS.PeerCertificates[1:], now)
	if err != nil {
		return nil, cert, err
	}
	// Only a client the judge accepted takes a token: others cannot use
	// up the renewals of the rest.
	if wait := rn.take(now); wait > 0 {
		ref := refuse(http.StatusTooManyRequests, RefuseRateLimited, "too many renewals: retry in %s", wait.Round(time.Second))
		ref.retryAfter = wait
		return nil, cert, ref
	}
	// A certificate with a successor may renew again (Force): the client
	// may have lost the answer. Interval bounds how often, in the store
	// (ca.CA.Renew checks it under the lock), so across replicas too.
	opts := ca.RenewOptions{CSR: csr, Force: true, AllowExpired: inGrace, Presented: cert, MinInterval: rn.cfg.Interval}
	if err := ca.CheckRenewable(rec, now, opts); err != nil {
		return nil, cert, renewRefusal(err)
	}
	if csr != nil {
		if err := ca.CheckRenewalCSR(cert, rec.Profile, csr); err != nil {
			if !errors.Is(err, ca.ErrNotRenewal) {
				// Its signature or key: not a question of identity.
				return nil, cert, refuse(http.StatusBadRequest, RefuseBadCSR, "%v", err)
			}
			return nil, cert, renewRefusal(err)
		}
	}
	unlock, err := rn.cfg.CA.Lock(rn.cfg.LockTimeout)
	if err != nil {
		ref := refuse(http.StatusServiceUnavailable, RefuseBusy, "%v", err)
		ref.retryAfter = 5 * time.Second
		return nil, cert, ref
	}
	defer unlock()
	// The record as it is now, under the lock (a revoke may have run).
	if rec, err = rn.cfg.CA.Record(cert.SerialNumber); err != nil {
		return nil, cert, err
	}
	res, err := rn.cfg.CA.Renew(rn.cfg.Signer, rec, opts)
	if err != nil {
		return nil, cert, renewRefusal(err)
	}
	return res, cert, nil
}

// readCSR reads and parses the body: a CSR in DER (application/pkcs10) or
// PEM, at most MaxCSR bytes.
func (rn *Renewer) readCSR(w http.ResponseWriter, r *http.Request) (*x509.CertificateRequest, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != CSRType && mt != PEMType && mt != "application/x-pem") {
			return nil, refuse(http.StatusUnsupportedMediaType, RefuseMediaType, "the body must be a CSR, %s (DER) or %s", CSRType, PEMType)
		}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rn.cfg.MaxCSR))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, refuse(http.StatusRequestEntityTooLarge, RefuseTooLarge, "the CSR is larger than %d bytes", rn.cfg.MaxCSR)
		}
		return nil, refuse(http.StatusBadRequest, RefuseBadCSR, "reading the CSR: %v", err)
	}
	csr, err := formats.ParseCSR(data)
	if err != nil {
		return nil, refuse(http.StatusBadRequest, RefuseBadCSR, "the body is not a CSR: %v", err)
	}
	return csr, nil
}

// judge judges the client certificate as the proxy would (revoke.Judge),
// allowing Grace past its notAfter, and finds its record.
func (rn *Renewer) judge(cert *x509.Certificate, rest []*x509.Certificate, now time.Time) (rec *ca.Record, inGrace bool, err error) {
	purpose := x509.ExtKeyUsageClientAuth
	if slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth) && !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		purpose = x509.ExtKeyUsageServerAuth
	}
	chainAt := now
	if rn.cfg.Grace > 0 && now.After(cert.NotAfter) && !now.After(cert.NotAfter.Add(rn.cfg.Grace)) {
		chainAt, inGrace = cert.NotAfter, true
	}
	inter := x509.NewCertPool()
	for _, c := range rest {
		inter.AddCert(c)
	}
	f := revoke.Facts{Cert: cert, CAs: []*x509.Certificate{rn.cfg.CA.Cert}, CRLIssuer: rn.cfg.CA.Cert,
		Purpose: purpose, At: now, Logged: rn.cfg.CA.LoggedRevocation}
	if crl := rn.cfg.CRL(); crl != nil {
		f.CRL = crl
	}
	if _, verr := cert.Verify(x509.VerifyOptions{Roots: rn.pool, Intermediates: inter, CurrentTime: chainAt,
		KeyUsages: []x509.ExtKeyUsage{purpose}}); verr != nil {
		f.Chain = revoke.ChainError(verr, cert, chainAt)
	} else {
		f.Issuer = rn.cfg.CA.Cert
	}
	if err := revoke.Judge(f); err != nil {
		var ve *revoke.VerifyError
		if !errors.As(err, &ve) {
			return nil, false, err
		}
		switch ve.Reason {
		case revoke.ReasonCRLMissing, revoke.ReasonCRLExpired, revoke.ReasonCRLNotYetValid:
			ref := refuse(http.StatusServiceUnavailable, RefuseCRLUnusable, "serve cannot check revocation: %s", ve.Detail)
			ref.retryAfter = time.Minute
			return nil, false, ref
		case revoke.ReasonExpired:
			if rn.cfg.Grace > 0 {
				ve.Detail += fmt.Sprintf("; renewal allows %s past notAfter", ca.FormatDuration(rn.cfg.Grace))
			}
		}
		return nil, false, refuse(http.StatusForbidden, string(ve.Reason), "%s", ve.Detail)
	}
	rec, err = rn.cfg.CA.Record(cert.SerialNumber)
	if errors.Is(err, ca.ErrNotFound) {
		return nil, false, refuse(http.StatusForbidden, RefuseUnknownCert, "this CA has no record of serial %x", cert.SerialNumber)
	}
	if err != nil {
		return nil, false, err
	}
	sum := sha256.Sum256(cert.Raw)
	if rec.Fingerprint != hex.EncodeToString(sum[:]) {
		return nil, false, refuse(http.StatusForbidden, RefuseUnknownCert, "serial %s of this CA's database is another certificate", rec.Serial)
	}
	if rec.Profile != ca.Server && rec.Profile != ca.Client {
		return nil, false, refuse(http.StatusForbidden, RefuseNotRenewable, "a certificate of profile %s is not renewed online", rec.Profile)
	}
	return rec, inGrace, nil
}

// renewRefusal maps the errors of ca.CheckRenewable, ca.CheckRenewalCSR
// and ca.Renew to refusals.
func renewRefusal(err error) error {
	var idErr *ca.IdentityError
	var recent *ca.RenewedRecentlyError
	switch {
	case errors.As(err, &recent):
		ref := refuse(http.StatusTooManyRequests, RefuseRecentlyRenewed, "serial %s was renewed by serial %s at %s: retry in %s",
			recent.Record.Serial, recent.Successor.Serial, rfc3339(recent.Successor.IssuedAt), recent.Wait.Round(time.Second))
		ref.retryAfter = recent.Wait
		return ref
	case errors.As(err, &idErr):
		reason := RefuseIdentity
		switch idErr.Field {
		case "extKeyUsage", "keyUsage":
			reason = RefuseKeyUsage
		case "basicConstraints":
			reason = RefuseCARequested
		}
		return refuse(http.StatusForbidden, reason, "%v", err)
	case errors.Is(err, ca.ErrRenewRevoked):
		return refuse(http.StatusForbidden, string(revoke.ReasonRevoked), "%v", err)
	case errors.Is(err, ca.ErrRenewExpired):
		return refuse(http.StatusForbidden, string(revoke.ReasonExpired), "%v", err)
	case errors.Is(err, ca.ErrNotRenewable):
		return refuse(http.StatusForbidden, RefuseNotRenewable, "%v", err)
	case errors.Is(err, ca.ErrSameKey):
		return refuse(http.StatusForbidden, RefuseSameKey, "%v: send a CSR for a new key", err)
	case errors.Is(err, ca.ErrNoRenewalKey):
		return refuse(http.StatusForbidden, RefuseNoHeldKey, "%v: send a CSR to %s", err, Path)
	case errors.Is(err, ca.ErrOutlivesCA):
		return refuse(http.StatusForbidden, RefuseOutlivesCA, "%v", err)
	case errors.Is(err, ca.ErrLocked):
		ref := refuse(http.StatusServiceUnavailable, RefuseBusy, "%v", err)
		ref.retryAfter = 5 * time.Second
		return ref
	}
	return err
}

// take takes a token of the rate limiter, or returns how long until one.
func (rn *Renewer) take(now time.Time) time.Duration {
	if !rn.filled.IsZero() {
		rn.tokens = min(float64(rn.cfg.Burst), rn.tokens+now.Sub(rn.filled).Seconds()*rn.cfg.Rate)
	}
	rn.filled = now
	if rn.tokens >= 1 {
		rn.tokens--
		return 0
	}
	return time.Duration((1 - rn.tokens) / rn.cfg.Rate * float64(time.Second))
}

// countIn counts one refusal for reason in m (reason -> *atomic.Uint64).
func countIn(m *sync.Map, reason string) {
	v, _ := m.LoadOrStore(reason, new(atomic.Uint64))
	v.(*atomic.Uint64).Add(1)
}

// WriteMetrics appends the renewal and bootstrap counters in Prometheus
// text.
func (rn *Renewer) WriteMetrics(w io.Writer) {
	fmt.Fprintf(w, "# HELP minica_serve_renewals_total Certificates renewed online.\n# TYPE minica_serve_renewals_total counter\n")
	fmt.Fprintf(w, "minica_serve_renewals_total %d\n", rn.renewed.Load())
	fmt.Fprintf(w, "# HELP minica_serve_renewals_refused_total Online renewals refused, by reason.\n# TYPE minica_serve_renewals_refused_total counter\n")
	rn.refused.Range(func(k, v any) bool {
		fmt.Fprintf(w, "minica_serve_renewals_refused_total{reason=%q} %d\n", k, v.(*atomic.Uint64).Load())
		return true
	})
	rn.writeBootstrapMetrics(w)
}

// subjectOf is the RFC 4514 subject of cert, as the proxy logs it.
func subjectOf(cert *x509.Certificate) string {
	dn, err := formats.DistinguishedName(cert.RawSubject)
	if err != nil {
		return cert.Subject.String()
	}
	return dn
}

// writeProblem writes ref as RFC 9457 problem details.
func writeProblem(w http.ResponseWriter, ref *refusal) {
	body, _ := json.Marshal(struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Reason string `json:"reason"`
		Detail string `json:"detail"`
	}{"about:blank", http.StatusText(ref.status), ref.status, ref.reason, ref.detail})
	h := w.Header()
	h.Set("Content-Type", ProblemType)
	h.Set("Cache-Control", "no-store")
	if ref.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(max(ref.retryAfter, time.Second).Round(time.Second)/time.Second)))
	}
	w.WriteHeader(ref.status)
	w.Write(append(body, '\n'))
}

// ServeDisabled answers a renewal request where serve renews nothing: 404
// with the reason renewal-disabled.
func ServeDisabled(w http.ResponseWriter, _ *http.Request) {
	writeProblem(w, refuse(http.StatusNotFound, RefuseRenewalOff,
		"this serve does not renew certificates: it renews on its HTTPS listener (--listen-tls) with the CA key, without --no-renew"))
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }
