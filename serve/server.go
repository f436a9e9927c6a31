package serve

import (
	"context"
	"crypto"
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"minica/ca"
	"minica/internal/eventlog"
	"minica/internal/osmem"
	"minica/revoke"
	"minica/serve/internal/connlimit"
	"minica/serve/internal/etag"
)

// Defaults of Config.
const (
	DefaultPollInterval      = 250 * time.Millisecond
	DefaultMaxWait           = 60 * time.Second
	DefaultMaxWaiters        = 512
	DefaultMaxConns          = 1024
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 16 << 10
	DefaultLockTimeout       = 10 * time.Second
	// SignerCheckInterval is how often Watch checks a CA key in a token
	// that signs (ca.SignerStatus); one that does not is checked at
	// every round, the signer bounding how often it opens the token.
	SignerCheckInterval = 5 * time.Second
	// MaxAge bounds Cache-Control max-age: a cache in front (a CDN) serves
	// a copy at most this long after a new CRL is published.
	MaxAge = 300 * time.Second
	// retryMin and retryMax bound the wait between failed re-signs.
	retryMin = 5 * time.Second
	retryMax = 5 * time.Minute
	// writeSlack is the time a response may take to write, beyond the
	// longest long poll: a client that stops reading is cut off.
	writeSlack = time.Minute
)

// Config configures a Server. CA is required; the rest has defaults.
type Config struct {
	// CA is the opened CA. The Server uses it from its own goroutines
	// only, one at a time; the caller must not use it while the Server runs
	// (an OCSP responder opens a handle of its own with ca.Open).
	CA *ca.CA
	// Signer is the CA key, for re-signing the CRL at half its lifetime;
	// nil (--no-sign) serves the published CRL as it is, and warns from
	// its half-life on that it will lapse. A Signer that implements
	// ca.SignerStatus (a key in a token) is checked by Watch, logs to Log,
	// and /healthz and /metrics say whether it signs.
	Signer crypto.Signer
	// LockTimeout is how long a re-sign waits for the CA lock.
	LockTimeout time.Duration
	// Log receives one line per event; nil discards them.
	Log io.Writer
	// Now is the clock; NewTimer makes the timers of long polls and
	// retries (it returns the channel and a stop function). Tests inject
	// both; nil means the real ones.
	Now      func() time.Time
	NewTimer func(time.Duration) (<-chan time.Time, func() bool)
	// PollInterval is how often crl.der is stat-ed for a CRL published by
	// another process.
	PollInterval time.Duration
	// MaxWait bounds the wait of a long poll (Prefer: wait=N); MaxWaiters
	// bounds the long polls waiting at once (beyond, they are answered at
	// once with Preference-Applied: wait=0).
	MaxWait    time.Duration
	MaxWaiters int
	// Limits of each listener: connections open at once (beyond, the
	// oldest connection not in a request is closed), the time to read
	// request headers, the idle keep-alive time and the header size.
	MaxConns          int
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	// OCSP answers /ocsp, /ocsp/... and the path of OCSPURL, every method;
	// nil answers 404 there.
	OCSP    http.Handler
	OCSPURL string
	// Enroll answers /enroll/... (an *enroll.Enroller); nil answers 404
	// there.
	Enroll http.Handler
	// Renew answers POST /renew and /renew/keygen, and POST /bootstrap
	// (a *renew.Renewer); nil answers 404 there, with the reason
	// renewal-disabled (bootstrap-disabled at /bootstrap).
	Renew http.Handler
	// ACME answers /acme/... (an *acme.Server); nil answers 404 there.
	ACME http.Handler
	// Signin answers GET / and /signin/... (a *signin.Handler); nil
	// leaves them to the table (404).
	Signin http.Handler
	// OnCRLChange, when set, is called after a new CRL is loaded and when
	// the revocation log changed (from the Server's goroutine).
	OnCRLChange func()
	// ExtraMetrics, when set, appends Prometheus text to /metrics.
	ExtraMetrics func(io.Writer)
	// SeparateOps leaves /healthz and /metrics off Handler: they are then
	// served only by OpsHandler (a listener of their own).
	SeparateOps bool
}

// Server publishes a CA's certificates and CRL over HTTP and keeps the CRL
// fresh. Make one with New, run Watch in a goroutine, and serve Handler.
type Server struct {
	cfg     Config
	log     *eventlog.Logger
	caMu    sync.Mutex // serialises every use of cfg.CA
	cur     atomic.Pointer[published]
	static  map[string]*resource // paths of the CA files
	crlPath map[string]bool      // paths answered with the CRL (DER)
	rootCRL map[string]string    // paths of the root's CRL, to their endpoint
	root    rootCRL              // the root CRL as last read, on an intermediate
	ocsp    map[string]bool      // exact paths of the OCSP responder
	ocspPre []string             // path prefixes of its RFC 5019 GETs
	waiters atomic.Int64
	done    chan struct{} // closed by Shutdown: long polls end at once
	stop    sync.Once
	m       metrics

	// Watcher state, used by its goroutine only.
	skipStamp  ca.FileStamp // the stamp of a crl.der refused or served already, not re-read
	lastErr    string       // the last load error logged, not repeated
	deltaSeen  deltaSeen    // the delta CRL judged and not installed, not re-read
	deltaErr   string       // the last delta CRL refusal logged, not repeated
	nextResign time.Time    // no re-sign before this after a failure
	backoff    time.Duration
	warned     string // the CRL number whose lapse was warned of
	rev        revWatch
	leaseSeen  bool // the signer's role was logged once
	// storeBehind is set when the store's CRL is older than the served
	// one: the signer reconciles before it publishes (see reconcile.go).
	storeBehind bool
	leaseErr    string // the last lease error logged, not repeated
	// storeErr is why the store did not answer at the last round, nil
	// while it answers; set by Watch's goroutine, read by /healthz.
	storeErr atomic.Pointer[string]
	// keyStatus is the Signer's ca.SignerStatus, nil for a key that
	// cannot be lost (a file); nextKeyCheck is when Watch checks it next.
	keyStatus    ca.SignerStatus
	nextKeyCheck time.Time

	srvMu     sync.Mutex
	shutdowns []func(context.Context) error // of every listener's server (register)
}

// published is one complete CRL as served. changed is closed when a newer
// CRL replaces it, which wakes every long poll waiting on it.
type published struct {
	crlBody
	stamp   ca.FileStamp
	changed chan struct{}
	// resignErr is the last failure to re-sign it, for /healthz.
	resignErr atomic.Pointer[string]
	// delta is the delta CRL served beside it (see delta.go), never nil
	// once the CRL is served; a delta that changes alone replaces it.
	delta atomic.Pointer[deltaState]
}

// crlBody is a CRL as a client receives it: parsed, its DER and the
// entity tag of the DER.
type crlBody struct {
	crl  *revoke.CRL
	der  []byte
	etag string
}

// The PEM form of a CRL is encoded from the DER for every request, never
// kept: a large CRL's PEM is a third bigger than its DER, and holding both
// (twice, while a new CRL replaces the old) would double serve's memory.
const (
	pemBegin = "-----BEGIN X509 CRL-----\n"
	pemEnd   = "-----END X509 CRL-----\n"
)

// pemLen is the length of the PEM that writePEM writes.
func (p *crlBody) pemLen() int {
	b := base64.StdEncoding.EncodedLen(len(p.der))
	return len(pemBegin) + b + (b+63)/64 + len(pemEnd)
}

// writePEM writes the CRL as PEM to w.
func (p *crlBody) writePEM(w io.Writer) {
	pem.Encode(w, &pem.Block{Type: "X509 CRL", Bytes: p.der})
}

// resource is a CA file served as it is.
type resource struct {
	body                        []byte
	etag, contentType, endpoint string
	lastModified                time.Time
}

// New checks cfg and loads the published CRL. Without a valid one it
// publishes one when it has the Signer, and fails otherwise.
func New(cfg Config) (*Server, error) {
	if cfg.CA == nil {
		return nil, errors.New("serve: no CA")
	}
	setDefaults(&cfg)
	s := &Server{cfg: cfg, log: eventlog.NewLogger(cfg.Log, cfg.Now), done: make(chan struct{})}
	s.m.requests = map[reqKey]uint64{}
	s.static = caResources(cfg.CA)
	s.crlPath = map[string]bool{"/crl.der": true}
	s.ocsp, s.ocspPre = map[string]bool{"/ocsp": true}, []string{"/ocsp/"}
	if p := urlPath(cfg.CA.Settings.CRLURL); p != "" {
		if _, taken := s.static[p]; taken || p == "/crl.pem" || isOps(p) || p == "/ocsp" {
			s.log.Event("crl-url-path-taken", "path", p, "url", cfg.CA.Settings.CRLURL)
		} else {
			s.crlPath[p] = true
		}
	}
	if p := urlPath(cfg.OCSPURL); p != "" && !s.crlPath[p] && s.static[p] == nil && !isOps(p) {
		s.ocsp[p] = true
		s.ocspPre = append(s.ocspPre, strings.TrimSuffix(p, "/")+"/")
	}
	s.rootCRL = s.rootCRLPaths()
	// Registered as a running serve of the CA, so that its store is not
	// switched under it (see ca.CA.HoldServing).
	if err := cfg.CA.HoldServing(); err != nil {
		return nil, err
	}
	if st, ok := cfg.Signer.(ca.SignerStatus); ok {
		s.keyStatus = st
		st.SetLog(s.log.Event)
	}
	s.caMu.Lock()
	defer s.caMu.Unlock()
	pub, err := cfg.CA.ReadPublishedCRL()
	if err != nil {
		if cfg.Signer == nil {
			return nil, fmt.Errorf("serving the CRL: %w", err)
		}
		s.log.Event("crl-unreadable", "error", err.Error(), "action", "publishing a new one")
		if pub, err = s.publishLocked(); err != nil {
			return nil, err
		}
	}
	s.install(pub)
	return s, nil
}

func setDefaults(c *Config) {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.NewTimer == nil {
		c.NewTimer = realTimer
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.LockTimeout, DefaultLockTimeout)
	def(&c.PollInterval, DefaultPollInterval)
	def(&c.MaxWait, DefaultMaxWait)
	def(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	if c.MaxWaiters <= 0 {
		c.MaxWaiters = DefaultMaxWaiters
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
}

// urlPath returns the path of an http(s) URL, or "" for none.
func urlPath(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Path == "" || u.Path == "/" {
		return ""
	}
	return u.Path
}

func caResources(c *ca.CA) map[string]*resource {
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Cert.Raw})
	var chainPEM, chainDER []byte
	for _, cert := range c.Chain {
		chainPEM = append(chainPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...)
		chainDER = append(chainDER, cert.Raw...)
	}
	at := c.Cert.NotBefore
	return map[string]*resource{
		"/ca.crt":    {body: c.Cert.Raw, etag: etag.Of(c.Cert.Raw), contentType: "application/pkix-cert", endpoint: "ca.crt", lastModified: at},
		"/ca.pem":    {body: certPEM, etag: etag.Of(c.Cert.Raw), contentType: "application/x-pem-file", endpoint: "ca.pem", lastModified: at},
		"/chain.pem": {body: chainPEM, etag: etag.Of(chainDER), contentType: "application/x-pem-file", endpoint: "chain.pem", lastModified: at},
	}
}

// install makes pub the served CRL, with the delta CRL that applies to it
// if any (loadDelta), and wakes the long polls. The CRL it
// replaces (its DER and parsed set, 75 MB at a million entries) and what
// reading pub cost are then given back to the system (osmem.Release), so
// that serve's memory after a revocation is the CRL served, not the
// high-water mark of the last reload. That is done releaseDelay later:
// the long polls woken hold the CRL replaced until they run. The caller
// holds caMu.
func (s *Server) install(pub *ca.PublishedCRL) {
	p := &published{
		crlBody: crlBody{crl: pub.CRL, der: pub.DER, etag: etag.Of(pub.DER)}, stamp: pub.Stamp, changed: make(chan struct{}),
	}
	p.delta.Store(&deltaState{changed: make(chan struct{})})
	// Read before p is served, so that a complete CRL and the delta
	// signed after it reach the long polls together.
	s.loadDelta(p)
	old := s.cur.Swap(p)
	s.log.Event("crl-loaded", "number", pub.CRL.Number().String(), "entries", fmt.Sprint(pub.CRL.Len()),
		"this_update", rfc3339(pub.CRL.ThisUpdate()), "next_update", rfc3339(pub.CRL.NextUpdate()), "etag", strings.Trim(p.etag, `"`))
	if old != nil {
		s.m.reloads.Add(1)
		close(old.changed)
		if s.cfg.OnCRLChange != nil {
			s.cfg.OnCRLChange()
		}
		osmem.ReleaseLater(len(pub.DER), releaseDelay)
	}
}

// releaseDelay is how long after installing a large CRL serve gives the
// memory of the one replaced back to the system: time enough for the long
// polls it woke to run and let go of it, even on a busy machine.
const releaseDelay = time.Second

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// CRL returns the CRL being served: the complete CRL with the delta CRL
// served beside it applied, when there is one, so that what it revokes is
// what a client following serve knows of.
func (s *Server) CRL() *revoke.CRL { return s.cur.Load().withDelta() }

// Watch polls crl.der and the revocation log every PollInterval, publishes
// revocations the CRL lacks and re-signs the CRL at half its lifetime, until
// ctx is done.
//
// A round also runs at once when the store notifies a change
// (ca.CA.CRLNotifications: LISTEN on PostgreSQL, inotify on the CA
// directory on Linux): serve then hears of a `minica revoke` within
// milliseconds, not a PollInterval.
func (s *Server) Watch(ctx context.Context) {
	notes := s.cfg.CA.CRLNotifications(ctx) // nil where only the poll tells
	for {
		s.check()
		c, stop := s.cfg.NewTimer(s.cfg.PollInterval)
		select {
		case <-ctx.Done():
			stop()
			return
		case <-s.done:
			stop()
			return
		case <-notes:
			stop()
		case <-c:
		}
	}
}

// check is one round of Watch: load a CRL that another process published,
// then re-sign the CRL when it is past half its lifetime, or when the
// delta CRL lists changes and its base is older than the CA's FullEvery
// (ca.CA.CompleteCRLDue).
func (s *Server) check() {
	s.caMu.Lock()
	defer s.caMu.Unlock()
	s.checkKey()
	if !s.storeUp() {
		return // nothing of a round works without the store
	}
	s.loadNewer()
	s.loadDelta(s.cur.Load())
	// Of several replicas on one database, only the lease holder signs.
	signer := s.cfg.Signer != nil && s.holdsLease()
	s.noticeRevocations(signer)
	cur := s.cur.Load()
	now := s.cfg.Now()
	if s.storeBehind && signer && !now.Before(s.nextResign) {
		s.resignLocked(cur) // reconciles first: see reconcile.go
		return
	}
	if !pastHalfLife(cur.crl, now) {
		// While deltas are signed, readers of the complete CRL alone see
		// a revocation when the next complete CRL is: within FullEvery.
		if signer && !now.Before(s.nextResign) && s.cfg.CA.CompleteCRLDue(cur.withDelta().Delta(), now) {
			s.resignLocked(cur)
		}
		return
	}
	if s.cfg.Signer != nil && !signer {
		return // another replica re-signs; its CRL is loaded when it lands
	}
	if s.cfg.Signer == nil {
		if n := cur.crl.Number().String(); s.warned != n {
			s.warned = n
			s.log.Event("crl-will-lapse", "number", n, "next_update", rfc3339(cur.crl.NextUpdate()),
				"reason", "serve runs with --no-sign and cannot re-sign the CRL; publish one with 'minica crl'")
		}
		return
	}
	if now.Before(s.nextResign) {
		return
	}
	s.resignLocked(cur)
}

// checkKey checks the CA key in a token: at every round while it cannot
// sign (the signer bounds how often it opens the token again), and every
// SignerCheckInterval while it can, so that /healthz tells of a token gone
// before a signature fails, and of it back without waiting for one. The
// caller holds caMu.
func (s *Server) checkKey() {
	if s.keyStatus == nil {
		return
	}
	now := s.cfg.Now()
	if s.keyStatus.Err() == nil && now.Before(s.nextKeyCheck) {
		return
	}
	s.keyStatus.Check()
	s.nextKeyCheck = now.Add(SignerCheckInterval)
}

// storeUp pings the store for /healthz and /metrics, and renews serve's
// registration in it (taken again after its session ended: a store that
// was switched meanwhile is the CA's no more, and unusable to this
// process), logging when it stops and starts answering. The caller holds
// caMu.
func (s *Server) storeUp() bool {
	err := s.cfg.CA.PingStore()
	if err == nil {
		err = s.cfg.CA.HoldServing()
	}
	if err == nil {
		if s.storeErr.Swap(nil) != nil {
			s.log.Event("store-reachable", "store", s.cfg.CA.Store())
		}
		return true
	}
	msg := err.Error()
	if errors.Is(err, ca.ErrStoreSwitched) {
		msg += ": start serve again"
	}
	if old := s.storeErr.Swap(&msg); old == nil || *old != msg {
		event := "store-unreachable"
		if errors.Is(err, ca.ErrStoreSwitched) {
			event = "store-switched"
		}
		s.log.Event(event, "store", s.cfg.CA.Store(), "error", msg)
	}
	return false
}

// pastHalfLife reports whether crl should be replaced at now: past half its
// lifetime, by the one freshness rule.
func pastHalfLife(crl *revoke.CRL, now time.Time) bool {
	st := revoke.Freshness(crl.ThisUpdate(), crl.NextUpdate(), revoke.Thresholds{}, now)
	return st == revoke.DueSoon || st == revoke.Expired || st == revoke.Grace
}

// loadNewer installs crl.der when it changed and holds a newer CRL. A
// version refused is logged and counted once, and not read again until it
// changes.
func (s *Server) loadNewer() {
	cur := s.cur.Load()
	stamp, err := s.cfg.CA.CRLStamp()
	if stamp == cur.stamp || (stamp != (ca.FileStamp{}) && stamp == s.skipStamp) {
		return
	}
	var pub *ca.PublishedCRL
	if err == nil {
		pub, err = s.cfg.CA.ReadPublishedCRL()
	}
	replace := false
	if err == nil {
		replace, err = s.mayReplace(pub, cur)
		if errors.Is(err, revoke.ErrLowerNumber) && s.cfg.CA.StoreCRLApart() {
			// A database restored from a backup, as a rule (a crl.der
			// replayed on the file store is not its database).
			s.storeBehind = true
		}
	}
	if err != nil {
		msg := err.Error()
		if stamp == (ca.FileStamp{}) && msg == s.lastErr {
			return // still missing
		}
		s.skipStamp, s.lastErr = stamp, msg
		s.m.loadFailures.Add(1)
		s.log.Event("crl-refused", "error", msg, "serving", cur.crl.Number().String())
		return
	}
	s.lastErr = ""
	if !replace {
		s.skipStamp = stamp // the same number: the CRL served, nothing to install
		return
	}
	s.install(pub)
}

// mayReplace asks revoke.MayReplace, the one rule for a CRL after another,
// whether pub may replace the CRL served.
func (s *Server) mayReplace(pub *ca.PublishedCRL, cur *published) (bool, error) {
	issuer := s.cfg.CA.Cert
	return revoke.MayReplace(revoke.IssuedCRL{CRL: pub.CRL, Issuer: issuer}, revoke.IssuedCRL{CRL: cur.crl, Issuer: issuer}, s.cfg.Now())
}

// replaces is mayReplace without the reason of a refusal.
func (s *Server) replaces(pub *ca.PublishedCRL, cur *published) bool {
	ok, err := s.mayReplace(pub, cur)
	return ok && err == nil
}

// resignLocked publishes a new CRL under the CA lock, as `minica crl` does,
// unless another process did meanwhile. The caller holds caMu.
func (s *Server) resignLocked(cur *published) {
	unlock, err := s.cfg.CA.Lock(s.cfg.LockTimeout)
	if err == nil {
		var pub *ca.PublishedCRL
		// Another process may have published since the last poll.
		if pub, err = s.cfg.CA.ReadPublishedCRL(); err == nil && s.replaces(pub, cur) && !pastHalfLife(pub.CRL, s.cfg.Now()) {
			unlock()
			s.install(pub)
			return
		}
		pub, err = s.publishLocked()
		unlock()
		if err == nil {
			s.backoff, s.nextResign = 0, time.Time{}
			s.m.resigns.Add(1)
			s.install(pub)
			return
		}
	}
	// Retries back off, but never so far that a short-lived CRL lapses
	// between two of them: at most a quarter of the time it has left.
	now := s.cfg.Now()
	s.backoff = min(max(2*s.backoff, retryMin), retryMax)
	retry := min(s.backoff, max(cur.crl.NextUpdate().Sub(now)/4, s.cfg.PollInterval))
	s.nextResign = now.Add(retry)
	s.m.resignFailures.Add(1)
	msg := err.Error()
	cur.resignErr.Store(&msg)
	s.log.Event("crl-resign-failed", "error", msg, "retry_in", retry.String(), "next_update", rfc3339(cur.crl.NextUpdate()))
}

// publishLocked signs and writes a new CRL with ca.CA.PublishCRL and reads
// it back. The caller holds the CA lock (or is New, before serving).
func (s *Server) publishLocked() (*ca.PublishedCRL, error) {
	if err := s.reconcileLocked(); err != nil {
		return nil, err
	}
	info, err := s.cfg.CA.PublishCRL(s.cfg.Signer, 0)
	if err != nil {
		return nil, fmt.Errorf("publishing the CRL: %w", err)
	}
	s.log.Event("crl-signed", "number", info.Number.String(), "next_update", rfc3339(info.NextUpdate))
	pub, err := s.cfg.CA.ReadPublishedCRL()
	if err != nil {
		return nil, err
	}
	return pub, nil
}

// Serve serves Handler on ln, within the limits of the Config, until
// Shutdown. With tlsConfig it serves HTTPS.
func (s *Server) Serve(ln net.Listener, tlsConfig *tls.Config) error {
	return s.serve(ln, tlsConfig, s.Handler())
}

// ServeOps serves OpsHandler on ln, within the same limits.
func (s *Server) ServeOps(ln net.Listener) error {
	return s.serve(ln, nil, s.OpsHandler())
}

func (s *Server) serve(ln net.Listener, tlsConfig *tls.Config, h http.Handler) error {
	lim := connlimit.NewListener(ln, s.cfg.MaxConns, &s.m.conns)
	srv := &http.Server{
		Handler:                      connlimit.Track(h, s.cfg.ReadHeaderTimeout),
		WriteTimeout:                 s.cfg.MaxWait + writeSlack,
		ReadHeaderTimeout:            s.cfg.ReadHeaderTimeout,
		IdleTimeout:                  s.cfg.IdleTimeout,
		MaxHeaderBytes:               s.cfg.MaxHeaderBytes,
		DisableGeneralOptionsHandler: true,
		ConnContext:                  lim.ConnContext,
		ErrorLog:                     discardLog,
	}
	var l net.Listener = lim
	if tlsConfig != nil {
		l = tls.NewListener(lim, tlsConfig)
	}
	if !s.register(ln, srv.Shutdown) {
		return nil
	}
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown ends the long polls at once (each answers as if its wait ran
// out), stops the listeners and waits for the requests in flight until ctx
// is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stop.Do(func() { close(s.done) })
	s.srvMu.Lock()
	fns := s.shutdowns
	s.srvMu.Unlock()
	var err error
	for _, f := range fns {
		err = errors.Join(err, f(ctx))
	}
	return err
}

// register adds stop to what Shutdown calls, unless Shutdown has begun:
// then it closes ln and returns false, and the listener is not served.
func (s *Server) register(ln net.Listener, stop func(context.Context) error) bool {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	select {
	case <-s.done:
		ln.Close()
		return false
	default:
	}
	s.shutdowns = append(s.shutdowns, stop)
	return true
}
