package signin

import (
	"crypto"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"minica/ca"
	"minica/internal/eventlog"
	"minica/internal/pagesec"
	"minica/serve/internal/ratelimit"
)

// Paths of the handler.
const (
	PathStart    = "/"
	PathLogin    = "/signin/login"
	PathCallback = "/signin/callback"
	PathDevices  = "/signin/devices"
	PathAdd      = "/signin/devices/add"
	PathRenew    = "/signin/devices/renew"
	PathRevoke   = "/signin/devices/revoke"
	PathLogout   = "/signin/logout"
)

// Defaults of Config.
const (
	// DefaultSessionLifetime is how long a session lasts: long enough to
	// name a device and download its bundle, short so that a browser
	// left signed in is soon of no use.
	DefaultSessionLifetime = 15 * time.Minute
	// DefaultLoginLifetime is how long a person has at the provider.
	DefaultLoginLifetime = 10 * time.Minute
	// DefaultLinkLifetime is the lifetime of a device's enrollment link:
	// the browser is sent to it at once.
	DefaultLinkLifetime = 15 * time.Minute
	// DefaultProviderTimeout bounds each call to the identity provider.
	DefaultProviderTimeout = 5 * time.Second
	// DefaultLockTimeout is how long a form waits for the CA lock.
	DefaultLockTimeout = 10 * time.Second
	// DefaultRate and DefaultBurst limit the requests of one source
	// address (per minute); DefaultTotalRate and DefaultTotalBurst those
	// of all together.
	DefaultRate       = 60
	DefaultBurst      = 20
	DefaultTotalRate  = 600
	DefaultTotalBurst = 120
	// MaxFormBytes bounds the body of a form.
	MaxFormBytes = 4 << 10
	// sweepEvery is how often a handler removes expired sign-ins and
	// sessions from the store.
	sweepEvery = 10 * time.Minute
	maxAddrs   = 10_000
)

// Config configures a Handler. CA, Signer, Issuer, ClientID,
// ClientSecret and RedirectURL are required, and Mapping must pass Check.
type Config struct {
	// CA is a handle of the Handler's own.
	CA *ca.CA
	// Signer is the CA key: revoking a device publishes a CRL.
	Signer crypto.Signer
	// Issuer is the provider's issuer URL, exactly as its discovery
	// document and ID tokens say it; https (http on a loopback host,
	// for tests).
	Issuer       string
	ClientID     string
	ClientSecret string
	// RedirectURL is https://HOST[:PORT]/signin/callback of this serve,
	// registered at the provider.
	RedirectURL string
	// Scopes are asked for besides openid, email and profile (a groups
	// scope, where the provider needs one).
	Scopes []string
	// ProviderName is shown on the start page ("Sign in with NAME").
	ProviderName string
	Mapping      Mapping
	// Contact tells a refused person whom to ask.
	Contact string
	// MaxDevices is how many valid devices a person may hold.
	MaxDevices int
	// CertValidity is the lifetime of a device certificate; 0 means the
	// CA's default for clients.
	CertValidity time.Duration
	// SessionLifetime, LoginLifetime, LinkLifetime, ProviderTimeout and
	// LockTimeout: see the defaults.
	SessionLifetime, LoginLifetime, LinkLifetime, ProviderTimeout, LockTimeout time.Duration
	// HTTPClient, when set, calls the provider instead of a client with
	// ProviderTimeout (tests).
	HTTPClient *http.Client
	// Log receives one line per event (never a secret).
	Log io.Writer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// AllowHTTP answers requests that came without TLS, with cookies
	// that are not Secure; only for a loopback listener, in tests.
	AllowHTTP             bool
	Rate, Burst           int
	TotalRate, TotalBurst int
}

// Handler answers the sign-in pages. See the package doc.
type Handler struct {
	cfg    Config
	log    *eventlog.Logger
	limits *ratelimit.Limits
	op     *provider
	mu     sync.Mutex // serializes this process's CA lock holders
	swept  atomic.Int64
	m      struct{ signedIn, refused, failed, devices, revoked, limited atomic.Uint64 }
}

// New checks cfg and fills its defaults. It does not call the provider:
// discovery happens at the first sign-in.
func New(cfg Config) (*Handler, error) {
	switch {
	case cfg.CA == nil || cfg.Signer == nil:
		return nil, errors.New("sign-in needs the CA and its key")
	case cfg.ClientID == "" || cfg.ClientSecret == "":
		return nil, errors.New("sign-in needs the client ID and secret registered at the identity provider")
	}
	if cfg.CA.IsRoot() {
		return nil, fmt.Errorf("sign-in issues client certificates, and %w: %q is a root CA", ca.ErrRootCA, cfg.CA.Dir().Path())
	}
	if err := checkProviderURL("issuer", cfg.Issuer); err != nil {
		return nil, err
	}
	if err := checkProviderURL("redirect URL", cfg.RedirectURL); err != nil {
		return nil, err
	}
	if u, _ := url.Parse(cfg.RedirectURL); u.Path != PathCallback || u.RawQuery != "" {
		return nil, fmt.Errorf("invalid redirect URL %q: want https://HOST[:PORT]%s, the public address of serve", cfg.RedirectURL, PathCallback)
	}
	if err := cfg.Mapping.Check(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur(&cfg.SessionLifetime, DefaultSessionLifetime)
	defDur(&cfg.LoginLifetime, DefaultLoginLifetime)
	defDur(&cfg.LinkLifetime, DefaultLinkLifetime)
	defDur(&cfg.ProviderTimeout, DefaultProviderTimeout)
	defDur(&cfg.LockTimeout, DefaultLockTimeout)
	defInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defInt(&cfg.MaxDevices, ca.DefaultMaxDevices)
	defInt(&cfg.Rate, DefaultRate)
	defInt(&cfg.Burst, DefaultBurst)
	defInt(&cfg.TotalRate, DefaultTotalRate)
	defInt(&cfg.TotalBurst, DefaultTotalBurst)
	if cfg.ProviderName == "" {
		cfg.ProviderName = "your company account"
	}
	h := &Handler{
		cfg: cfg, log: eventlog.NewLogger(cfg.Log, cfg.Now),
		limits: ratelimit.New(cfg.Rate, cfg.Burst, cfg.TotalRate, cfg.TotalBurst, maxAddrs),
	}
	h.op = newProvider(&h.cfg)
	return h, nil
}

// checkProviderURL checks an https URL with a host (http only on a
// loopback host, for tests).
func checkProviderURL(what, s string) error {
	u, err := url.Parse(s)
	if err == nil && u.Host != "" && u.User == nil && (u.Scheme == "https" || u.Scheme == "http" && isLoopbackHost(u.Hostname())) {
		return nil
	}
	return fmt.Errorf("invalid %s %q: want an https:// URL", what, s)
}

func isLoopbackHost(h string) bool { return h == "localhost" || h == "127.0.0.1" || h == "::1" }

// WriteMetrics appends the sign-in counters in Prometheus text.
func (h *Handler) WriteMetrics(w io.Writer) {
	for _, c := range []struct {
		name, help string
		v          *atomic.Uint64
	}{
		{"signed_in", "People who signed in.", &h.m.signedIn},
		{"refused", "Sign-ins refused: a bad or replayed callback, a token that failed its checks, a person the mapping refuses.", &h.m.refused},
		{"failed", "Sign-ins and forms that failed on the server's or the provider's side.", &h.m.failed},
		{"device_links", "Enrollment links made for a device (new or renewed).", &h.m.devices},
		{"revoked", "Devices revoked by their owner.", &h.m.revoked},
		{"rate_limited", "Sign-in requests refused by a rate limit.", &h.m.limited},
	} {
		fmt.Fprintf(w, "# HELP minica_serve_signin_%s_total %s\n# TYPE minica_serve_signin_%[1]s_total counter\nminica_serve_signin_%[1]s_total %[3]d\n", c.name, c.help, c.v.Load())
	}
}

// ServeHTTP answers the paths of the package doc.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	pagesec.SetFormHeaders(w.Header(), pageCSP)
	if r.TLS == nil && !h.cfg.AllowHTTP {
		h.render(w, http.StatusForbidden, &pageData{Kind: "error", Title: "HTTPS only", Message: "Sign-in is answered over HTTPS only. Open the https:// address of this page."})
		return
	}
	from := ratelimit.Host(r.RemoteAddr)
	if wait, ok := h.limits.Allow(ratelimit.Key(from), h.cfg.Now()); !ok {
		h.m.limited.Add(1)
		h.log.Event("signin-rate-limited", "from", from)
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second)/time.Second)+1))
		h.render(w, http.StatusTooManyRequests, &pageData{Kind: "error", Title: "Too many requests", Message: "Too many requests from your address. Wait a minute and try again."})
		return
	}
	h.maybeSweep()
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	post := r.Method == http.MethodPost
	switch {
	case r.URL.Path == PathStart && get:
		h.serveStart(w, r)
	case r.URL.Path == PathLogin && get:
		h.serveLogin(w, r, from)
	case r.URL.Path == PathCallback && get:
		h.serveCallback(w, r, from)
	case r.URL.Path == PathDevices && get:
		if s, token := h.session(w, r); s != nil {
			h.renderDevices(w, http.StatusOK, s, token, "", "")
		}
	case (r.URL.Path == PathAdd || r.URL.Path == PathRenew || r.URL.Path == PathRevoke || r.URL.Path == PathLogout) && post:
		h.serveForm(w, r, from)
	case r.URL.Path == PathStart || r.URL.Path == PathLogin || r.URL.Path == PathCallback || r.URL.Path == PathDevices:
		w.Header().Set("Allow", "GET, HEAD")
		h.render(w, http.StatusMethodNotAllowed, &pageData{Kind: "error", Title: "Method not allowed", Message: "Open this page in a browser."})
	case r.URL.Path == PathAdd || r.URL.Path == PathRenew || r.URL.Path == PathRevoke || r.URL.Path == PathLogout:
		w.Header().Set("Allow", "POST")
		h.render(w, http.StatusMethodNotAllowed, &pageData{Kind: "error", Title: "Method not allowed", Message: "This address takes the forms of My certificates only."})
	default:
		h.render(w, http.StatusNotFound, &pageData{Kind: "error", Title: "Not found", Message: "There is no such page."})
	}
}

// maybeSweep removes expired sign-ins and sessions from the store, in the
// background, at most once every sweepEvery in this process.
func (h *Handler) maybeSweep() {
	now := h.cfg.Now().UnixNano()
	last := h.swept.Load()
	if now-last < int64(sweepEvery) || !h.swept.CompareAndSwap(last, now) {
		return
	}
	go func() {
		if n, err := h.cfg.CA.SweepSignin(); err != nil {
			h.log.Event("signin-sweep-failed", "error", err.Error())
		} else if n > 0 {
			h.log.Event("signin-swept", "removed", strconv.Itoa(n))
		}
	}()
}

// Cookies: the session, and the one that binds a sign-in under way to
// the browser that started it. __Host- makes a browser refuse them
// unless Secure, for this host only, path /; plain HTTP (tests) has to
// do without.
const (
	sessionCookie = "minica-session"
	bindingCookie = "minica-signin"
)

func (h *Handler) cookieName(base string) string {
	if h.cfg.AllowHTTP {
		return base
	}
	return "__Host-" + base
}

// setCookie sets a cookie of base to value for maxAge (0 deletes it).
// SameSite=Lax, not Strict: the callback arrives from the provider, another
// site, and a Strict cookie would not come with it.
func (h *Handler) setCookie(w http.ResponseWriter, base, value string, maxAge time.Duration) {
	c := &http.Cookie{Name: h.cookieName(base), Value: value, Path: "/", HttpOnly: true, Secure: !h.cfg.AllowHTTP, SameSite: http.SameSiteLaxMode}
	if maxAge > 0 {
		c.MaxAge = int(maxAge / time.Second)
	} else {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

func (h *Handler) cookie(r *http.Request, base string) string {
	c, err := r.Cookie(h.cookieName(base))
	if err != nil {
		return ""
	}
	return c.Value
}

// hashHex is the SHA-256 of s, in hex, under a label.
func hashHex(label, s string) string {
	sum := sha256.Sum256([]byte("minica signin " + label + " v1\x00" + s))
	return hex.EncodeToString(sum[:])
}

// csrfToken binds the forms to the session: a hash of its cookie, which
// a page of another site can neither read nor compute.
func csrfToken(session string) string {
	sum := sha256.Sum256([]byte("minica signin csrf v1\x00" + session))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// session returns the session of the request's cookie, or answers with
// the page that asks to sign in and returns nil.
func (h *Handler) session(w http.ResponseWriter, r *http.Request) (*ca.SigninSession, string) {
	token := h.cookie(r, sessionCookie)
	s, err := h.cfg.CA.SigninSession(token)
	if err == nil {
		return s, token
	}
	if !errors.Is(err, ca.ErrSigninUnknown) {
		h.m.failed.Add(1)
		h.log.Event("signin-session-error", "error", err.Error())
		h.render(w, http.StatusInternalServerError, &pageData{Kind: "error", Title: "Unavailable", Message: "The server could not read your session. Try again in a minute."})
		return nil, ""
	}
	if token != "" {
		h.setCookie(w, sessionCookie, "", 0)
	}
	h.render(w, http.StatusUnauthorized, &pageData{Kind: "signedout", Title: "Sign in first", Provider: h.cfg.ProviderName,
		Message: "Your session ended, or you have not signed in. Sign in to see your certificates."})
	return nil, ""
}

// serveStart answers the start page.
func (h *Handler) serveStart(w http.ResponseWriter, r *http.Request) {
	_, err := h.cfg.CA.SigninSession(h.cookie(r, sessionCookie))
	h.render(w, http.StatusOK, &pageData{Kind: "start", Title: "Get your certificate", Provider: h.cfg.ProviderName, SignedIn: err == nil})
}
