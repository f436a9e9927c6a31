package acme

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"minica/ca"
	"minica/ca/store"
	"minica/internal/eventlog"
	"minica/serve/acme/validate"
)

// Paths of the ACME resources, under Prefix.
const (
	Prefix        = "/acme"
	DirectoryPath = Prefix + "/directory"
	noncePath     = Prefix + "/new-nonce"
	newAcctPath   = Prefix + "/new-account"
	accountPath   = Prefix + "/account/"
	keyChangePath = Prefix + "/key-change"
	newOrderPath  = Prefix + "/new-order"
	orderPath     = Prefix + "/order/"
	authzPath     = Prefix + "/authz/"
	challPath     = Prefix + "/chall/"
	certPath      = Prefix + "/cert/"
	revokePath    = Prefix + "/revoke-cert"
	renewalPath   = Prefix + "/renewal-info/"
)

// Defaults of Config.
const (
	DefaultMaxBody         = 64 << 10
	DefaultNonceLifetime   = time.Hour
	DefaultOrderLifetime   = 24 * time.Hour
	DefaultLockTimeout     = 10 * time.Second
	DefaultValidations     = 64
	DefaultRenewalRetry    = time.Hour
	DefaultValidationRetry = 2 * time.Second
)

// Validator checks challenges (package validate's Validator).
type Validator interface {
	HTTP01(ctx context.Context, id validate.Identifier, token, keyAuthorization string) error
	TLSALPN01(ctx context.Context, id validate.Identifier, keyAuthorization string) error
	DNS01(ctx context.Context, id validate.Identifier, keyAuthorization string) error
}

// Config of a Server.
type Config struct {
	// CA is the Server's own handle of the CA (it serialises its use);
	// Signer its key.
	CA     *ca.CA
	Signer crypto.Signer
	// NoEAB opens account creation to anyone who reaches the server; the
	// accounts then get ca.ACMEOpen's policy. Without it, newAccount needs
	// an external account binding (`minica acme account add`).
	NoEAB bool
	// Validator checks the challenges.
	Validator Validator
	// MaxBody bounds a request's body; LockTimeout the wait for the CA
	// lock; Validations the challenges validated at once.
	MaxBody     int64
	LockTimeout time.Duration
	Validations int
	// NonceLifetime and OrderLifetime bound nonces and orders (with
	// their authorizations).
	NonceLifetime, OrderLifetime time.Duration
	// RenewalRetry is the Retry-After of renewal information (RFC 9773):
	// how soon a client asks again.
	RenewalRetry time.Duration
	// Log receives one line per event; Now is the clock (nil: the CA's).
	Log io.Writer
	Now func() time.Time
}

// Server answers the ACME resources under Prefix (RFC 8555, RFC 9773).
// Its state is in the CA's store (ca.CA.ACMEStore), so that several
// Servers of one CA (serve replicas on PostgreSQL) answer any step of a
// client's. Make one with New; Close stops its validations.
type Server struct {
	cfg Config
	log *eventlog.Logger
	obj objects
	// mu serialises the use of cfg.CA (the store's objects are not under
	// it: the store is safe for concurrent use).
	mu sync.Mutex

	ctx    context.Context // cancelled by Close: validations and the issuer stop
	cancel context.CancelFunc
	wg     sync.WaitGroup
	slots  chan struct{} // validations in flight
	// finalizes takes the finalizes to the issuer (see issuer).
	finalizes chan *finalizeJob

	issued   atomic.Uint64
	problems sync.Map // type -> *atomic.Uint64

	routes []route // made once: a request finds its handler without allocating
	// nonces numbers the nonces handed out (store.NewNonce), from a
	// random start so that replicas sharing a store seldom meet.
	nonces atomic.Uint32
}

// New checks cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.CA == nil || cfg.Signer == nil || cfg.Validator == nil {
		return nil, errors.New("creating the ACME server: the CA, its key and a validator are required")
	}
	if cfg.CA.IsRoot() {
		return nil, fmt.Errorf("creating the ACME server: %w", ca.ErrRootCA)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.LockTimeout, DefaultLockTimeout)
	def(&cfg.NonceLifetime, DefaultNonceLifetime)
	def(&cfg.OrderLifetime, DefaultOrderLifetime)
	def(&cfg.RenewalRetry, DefaultRenewalRetry)
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Validations <= 0 {
		cfg.Validations = DefaultValidations
	}
	if cfg.Now == nil {
		cfg.Now = cfg.CA.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, log: eventlog.NewLogger(cfg.Log, cfg.Now), obj: objects{cfg.CA.ACMEStore(), new(decodedAccounts)},
		ctx: ctx, cancel: cancel, slots: make(chan struct{}, cfg.Validations), finalizes: make(chan *finalizeJob)}
	s.routes = s.routeTable()
	s.nonces.Store(mathrand.Uint32())
	s.wg.Go(s.issuer)
	return s, nil
}

// Close stops the validations in flight and the issuer (after the batch
// it is issuing), and waits for them.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
}

// url is the absolute URL of path on the host the client asked for: the
// URL a client must put in its JWS, and the one objects link to.
func (s *Server) url(r *http.Request, path string) string {
	return "https://" + r.Host + path
}

// route is one resource: its handler, and whether its path is a prefix.
type route struct {
	path   string
	prefix bool
	serve  func(w http.ResponseWriter, r *http.Request) (any, error)
}

func (s *Server) routeTable() []route {
	return []route{
		{DirectoryPath, false, s.serveDirectory},
		{newAcctPath, false, s.serveNewAccount},
		{accountPath, true, s.serveAccount},
		{keyChangePath, false, s.serveKeyChange},
		{newOrderPath, false, s.serveNewOrder},
		{orderPath, true, s.serveOrder},
		{authzPath, true, s.serveAuthz},
		{challPath, true, s.serveChallenge},
		{certPath, true, s.serveCert},
		{revokePath, false, s.serveRevoke},
		{renewalPath, true, s.serveRenewalInfo},
	}
}

// ServeHTTP answers a request under Prefix. Every answer carries a fresh
// nonce and the directory's link; errors are problem documents.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	if r.TLS == nil {
		s.fail(w, r, prob(http.StatusForbidden, ErrUnauthorized, "ACME is served on serve's HTTPS listener only (--listen-tls)"))
		return
	}
	h.Set("Link", "<"+s.url(r, DirectoryPath)+`>;rel="index"`)
	if r.URL.Path == noncePath {
		s.serveNonce(w, r)
		return
	}
	if r.URL.RawQuery != "" {
		s.fail(w, r, malformed("ACME resources take no query"))
		return
	}
	for _, rt := range s.routes {
		if r.URL.Path == rt.path || (rt.prefix && strings.HasPrefix(r.URL.Path, rt.path) && len(r.URL.Path) > len(rt.path)) {
			s.answer(w, r, rt.serve)
			return
		}
	}
	s.fail(w, r, notFound("ACME resource "+r.URL.Path))
}

// answer runs a handler: a problem it returns is answered as such, any
// other error as serverInternal; a value is answered as JSON (a handler
// that wrote its answer returns nil, nil).
func (s *Server) answer(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter, *http.Request) (any, error)) {
	if r.Method == http.MethodPost {
		if err := s.addNonce(w); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	v, err := serve(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if v != nil {
		writeJSON(w, http.StatusOK, v)
	}
}

// fail answers err as a problem and logs it.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var p *problem
	if !errors.As(err, &p) {
		p = s.internal(err)
	}
	v, _ := s.problems.LoadOrStore(p.short(), new(atomic.Uint64))
	v.(*atomic.Uint64).Add(1)
	s.log.Event("acme-refused", "type", p.short(), "status", strconv.Itoa(p.Status), "path", r.URL.Path,
		"client", r.RemoteAddr, "detail", p.Detail)
	writeProblem(w, p)
}

// internal maps an error that is not a problem: busy (the CA lock), the
// signer down, or serverInternal.
func (s *Server) internal(err error) *problem {
	switch {
	case errors.Is(err, ca.ErrLocked):
		p := prob(http.StatusServiceUnavailable, ErrServerInternal, "the CA is busy: %v", err)
		p.retryAfter = 5 * time.Second
		return p
	}
	if st, ok := s.cfg.Signer.(ca.SignerStatus); ok && st.Err() != nil {
		p := prob(http.StatusServiceUnavailable, ErrServerInternal, "the CA key cannot sign now: %v", st.Err())
		p.retryAfter = 30 * time.Second
		return p
	}
	return prob(http.StatusInternalServerError, ErrServerInternal, "%v", err)
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeProblem(w, prob(http.StatusInternalServerError, ErrServerInternal, "encoding the answer: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// created answers v with status 201 and its Location.
func created(w http.ResponseWriter, location string, v any) (any, error) {
	w.Header().Set("Location", location)
	writeJSON(w, http.StatusCreated, v)
	return nil, nil
}

// withLocation answers v with status 200 and its Location.
func withLocation(w http.ResponseWriter, location string, v any) (any, error) {
	w.Header().Set("Location", location)
	return v, nil
}

// serveNonce answers newNonce: HEAD 200, GET 204 (RFC 8555 section 7.2).
func (s *Server) serveNonce(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodHead && r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET, HEAD")
		s.fail(w, r, prob(http.StatusMethodNotAllowed, ErrMalformed, "newNonce is HEAD or GET"))
		return
	}
	if err := s.addNonce(w); err != nil {
		s.fail(w, r, err)
		return
	}
	if r.Method == http.MethodGet {
		w.WriteHeader(http.StatusNoContent)
	}
}

// addNonce makes a nonce, stores it and sets it as Replay-Nonce.
func (s *Server) addNonce(w http.ResponseWriter) error {
	n := store.NewNonce(s.nonces.Add(1))
	if err := s.obj.db.AddNonce(n, s.cfg.Now().Add(s.cfg.NonceLifetime)); err != nil {
		return err
	}
	w.Header().Set("Replay-Nonce", n)
	return nil
}

// useNonce uses up a request's nonce, or refuses it with badNonce.
func (s *Server) useNonce(n string) error {
	if n == "" {
		return prob(http.StatusBadRequest, ErrBadNonce, "the JWS header has no nonce")
	}
	ok, err := s.obj.db.UseNonce(n, s.cfg.Now())
	if err != nil {
		return err
	}
	if !ok {
		return prob(http.StatusBadRequest, ErrBadNonce, "the nonce is unknown, used or expired: get a new one")
	}
	return nil
}

// serveDirectory answers the directory (RFC 8555 section 7.1.1).
func (s *Server) serveDirectory(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return nil, prob(http.StatusMethodNotAllowed, ErrMalformed, "the directory is GET")
	}
	u := func(p string) string { return s.url(r, p) }
	return map[string]any{
		"newNonce":    u(noncePath),
		"newAccount":  u(newAcctPath),
		"newOrder":    u(newOrderPath),
		"revokeCert":  u(revokePath),
		"keyChange":   u(keyChangePath),
		"renewalInfo": u(strings.TrimSuffix(renewalPath, "/")),
		"meta":        map[string]any{"externalAccountRequired": !s.cfg.NoEAB},
	}, nil
}

// locked runs fn holding the Server's use of the CA and the CA lock.
func (s *Server) locked(fn func(c *ca.CA) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.cfg.CA.Lock(s.cfg.LockTimeout)
	if err != nil {
		return err
	}
	defer unlock()
	return fn(s.cfg.CA)
}

// withCA runs fn holding the Server's use of the CA, without the lock.
func (s *Server) withCA(fn func(c *ca.CA) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fn(s.cfg.CA)
}

// b64 encodes base64url without padding.
func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// WriteMetrics appends the ACME counters in Prometheus text.
func (s *Server) WriteMetrics(w io.Writer) {
	fmt.Fprintf(w, "# HELP minica_acme_certificates_total Certificates issued over ACME.\n# TYPE minica_acme_certificates_total counter\n")
	fmt.Fprintf(w, "minica_acme_certificates_total %d\n", s.issued.Load())
	fmt.Fprintf(w, "# HELP minica_acme_problems_total ACME requests refused, by error type.\n# TYPE minica_acme_problems_total counter\n")
	s.problems.Range(func(k, v any) bool {
		fmt.Fprintf(w, "minica_acme_problems_total{type=%q} %d\n", k, v.(*atomic.Uint64).Load())
		return true
	})
}
