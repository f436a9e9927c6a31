package enroll

import (
	"crypto"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
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
	"minica/formats"
	"minica/internal/eventlog"
	"minica/internal/pagesec"
	"minica/serve/internal/ratelimit"
)

// Defaults of Config.
const (
	// DefaultLockTimeout is how long an issuance waits for the CA lock.
	DefaultLockTimeout = 10 * time.Second
	// DefaultMinPasswordLength is the shortest bundle password a person
	// may choose: the bundle travels (mail, downloads folder, backups) and
	// its password is all that protects the key in it.
	DefaultMinPasswordLength = 10
	// DefaultRate and DefaultBurst limit the enrollment
	// requests of one source address: a person needs about three (the
	// page, a generated password, the download).
	DefaultRate  = 20 // per minute
	DefaultBurst = 10
	// DefaultTotalRate and DefaultTotalBurst limit the
	// enrollment requests of all addresses together, so that a flood
	// spread over many addresses cannot keep the CA key busy.
	DefaultTotalRate  = 300 // per minute
	DefaultTotalBurst = 60
	// MaxFormBytes bounds the body of an enrollment form.
	MaxFormBytes = 4 << 10
	// maxAddrs bounds the per-address rate table.
	maxAddrs = 10_000
)

// Config configures an Enroller. CA and Signer are required.
type Config struct {
	// CA is a handle of the Enroller's own: serve's other handlers use
	// theirs from other goroutines.
	CA *ca.CA
	// Signer is the CA key: enrollment issues certificates.
	Signer crypto.Signer
	// LockTimeout is how long an issuance waits for the CA lock.
	LockTimeout time.Duration
	// Log receives one line per event (never a token or a password).
	Log io.Writer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// AllowHTTP answers enrollment requests that came without TLS; only
	// for a loopback listener, in tests.
	AllowHTTP bool
	// SigningCert, when set, returns the certificate (with its key and
	// chain) that signs .mobileconfig profiles: serve's HTTPS certificate.
	SigningCert func() (*tls.Certificate, error)
	// MinPasswordLength, Rate, Burst, TotalRate and TotalBurst: see the
	// defaults above. Rates are requests per minute.
	MinPasswordLength     int
	Rate, Burst           int
	TotalRate, TotalBurst int
	// P12Iterations, when non-zero, replaces the bundles' KDF iteration
	// counts; only tests lower it.
	P12Iterations int
}

// Enroller answers /enroll/TOKEN: the page of a pending enrollment, its
// form, and the bundle. See docs/enrollment.md for the flow and the threat
// model.
type Enroller struct {
	cfg    Config
	log    *eventlog.Logger
	mu     sync.Mutex // serialises issuances in this process (the CA lock serialises processes)
	limits *ratelimit.Limits
	m      enrollMetrics
}

type enrollMetrics struct {
	issued, limited, refused, failed atomic.Uint64
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Enroller, error) {
	if cfg.CA == nil || cfg.Signer == nil {
		return nil, errors.New("serve: enrollment needs the CA and its key")
	}
	if cfg.CA.IsRoot() {
		return nil, fmt.Errorf("serve: enrollment issues client certificates, and %w: %q is a root CA", ca.ErrRootCA, cfg.CA.Dir().Path())
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LockTimeout <= 0 {
		cfg.LockTimeout = DefaultLockTimeout
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.MinPasswordLength, DefaultMinPasswordLength)
	def(&cfg.Rate, DefaultRate)
	def(&cfg.Burst, DefaultBurst)
	def(&cfg.TotalRate, DefaultTotalRate)
	def(&cfg.TotalBurst, DefaultTotalBurst)
	return &Enroller{
		cfg: cfg, log: eventlog.NewLogger(cfg.Log, cfg.Now),
		limits: ratelimit.New(cfg.Rate, cfg.Burst, cfg.TotalRate, cfg.TotalBurst, maxAddrs),
	}, nil
}

// WriteMetrics appends the enrollment counters in Prometheus text.
func (h *Enroller) WriteMetrics(w io.Writer) {
	fmt.Fprintf(w, "# HELP minica_serve_enroll_issued_total Certificates issued through enrollment links.\n# TYPE minica_serve_enroll_issued_total counter\nminica_serve_enroll_issued_total %d\n", h.m.issued.Load())
	fmt.Fprintf(w, "# HELP minica_serve_enroll_rate_limited_total Enrollment requests refused by a rate limit.\n# TYPE minica_serve_enroll_rate_limited_total counter\nminica_serve_enroll_rate_limited_total %d\n", h.m.limited.Load())
	fmt.Fprintf(w, "# HELP minica_serve_enroll_refused_total Enrollment requests for an unknown, used, cancelled or expired link, or with a bad form.\n# TYPE minica_serve_enroll_refused_total counter\nminica_serve_enroll_refused_total %d\n", h.m.refused.Load())
	fmt.Fprintf(w, "# HELP minica_serve_enroll_failed_total Enrollments whose issuance failed.\n# TYPE minica_serve_enroll_failed_total counter\nminica_serve_enroll_failed_total %d\n", h.m.failed.Load())
}

// SetHeaders sets what every enrollment response carries: never
// cached, a referrer for serve itself only (the URL holds the token), a
// strict CSP (see pagesec.SetFormHeaders).
func SetHeaders(w http.ResponseWriter) { pagesec.SetFormHeaders(w.Header(), pageCSP) }

// ServeHTTP answers GET/HEAD (the page) and POST (the form) of
// /enroll/TOKEN.
func (h *Enroller) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	SetHeaders(w)
	if r.TLS == nil && !h.cfg.AllowHTTP {
		h.render(w, http.StatusForbidden, &pageData{Kind: "error", Title: "HTTPS only",
			Message: "Enrollment links are answered over HTTPS only. Use the https:// link you were given."})
		return
	}
	from := ratelimit.Host(r.RemoteAddr)
	token := strings.TrimPrefix(r.URL.Path, "/enroll/")
	id := ca.EnrollmentID(token) // a short hash: safe to log
	if wait, ok := h.limits.Allow(ratelimit.Key(from), h.cfg.Now()); !ok {
		h.m.limited.Add(1)
		h.log.Event("enroll-rate-limited", "id", id, "from", from)
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second)/time.Second)+1))
		h.render(w, http.StatusTooManyRequests, &pageData{Kind: "error", Title: "Too many requests",
			Message: "Too many requests from your address. Wait a minute and open the link again."})
		return
	}
	if r.URL.RawQuery != "" || r.URL.ForceQuery {
		h.m.refused.Add(1)
		h.log.Event("enroll-refused", "id", id, "from", from, "status", "query")
		h.render(w, http.StatusBadRequest, &pageData{Kind: "error", Title: "Bad link", Message: "An enrollment link has nothing after its token. Open the link exactly as you got it."})
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.serveForm(w, r, token, id, from)
	case http.MethodPost:
		h.servePost(w, r, token, id, from)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		h.render(w, http.StatusMethodNotAllowed, &pageData{Kind: "error", Title: "Method not allowed", Message: "Open the link in a browser."})
	}
}

// lookup finds a pending enrollment of token, or answers with the page of
// what became of it and returns nil. Unknown, expired, cancelled, used and
// failed links all get 404 and the same headers, after the same work (see
// ca.LookupEnrollment), so that answers do not help to probe for tokens.
func (h *Enroller) lookup(w http.ResponseWriter, token, id, from string) *ca.Enrollment {
	e, err := h.cfg.CA.LookupEnrollment(token)
	if err != nil && !errors.Is(err, ca.ErrEnrollmentUnknown) {
		h.m.failed.Add(1)
		h.log.Event("enroll-error", "id", id, "from", from, "error", err.Error())
		h.render(w, http.StatusInternalServerError, &pageData{Kind: "error", Title: "Enrollment unavailable",
			Message: "The server could not read this enrollment. Ask the person who sent you the link."})
		return nil
	}
	if e != nil && e.StatusAt(h.cfg.Now()) == ca.EnrollPending {
		return e
	}
	h.refuse(w, e, id, from)
	return nil
}

// refuse answers 404 for a link that cannot be used, saying why.
func (h *Enroller) refuse(w http.ResponseWriter, e *ca.Enrollment, id, from string) {
	h.m.refused.Add(1)
	p := &pageData{Kind: "gone", Title: "This link does not work", Message: "This enrollment link is not valid. Check that you copied all of it, or ask for a new one."}
	status := "unknown"
	if e != nil {
		status = string(e.StatusAt(h.cfg.Now()))
		p.Name = e.Name
		switch ca.EnrollmentStatus(status) {
		case ca.EnrollUsed:
			p.Title = "This link was already used"
			p.Message = fmt.Sprintf("This link was already used on %s from the address %s. A link works once. If that was not you, tell the person who sent it at once.",
				e.UsedAt.UTC().Format("2 January 2006 at 15:04 UTC"), e.UsedFrom)
		case ca.EnrollFailed:
			p.Title = "This link was used, but the certificate could not be issued"
			p.Message = fmt.Sprintf("This link was used on %s from the address %s, and issuing the certificate failed. Ask for a new link.",
				e.UsedAt.UTC().Format("2 January 2006 at 15:04 UTC"), e.UsedFrom)
		case ca.EnrollExpired:
			p.Title = "This link has expired"
			p.Message = fmt.Sprintf("This link expired on %s. Ask for a new one.", e.ExpiresAt.UTC().Format("2 January 2006 at 15:04 UTC"))
		case ca.EnrollCancelled:
			p.Title = "This link was cancelled"
			p.Message = "This link was cancelled. Ask for a new one if you still need a certificate."
		}
	}
	h.log.Event("enroll-refused", "id", id, "from", from, "status", status)
	h.render(w, http.StatusNotFound, p)
}

// serveForm answers the page of a pending enrollment.
func (h *Enroller) serveForm(w http.ResponseWriter, r *http.Request, token, id, from string) {
	e := h.lookup(w, token, id, from)
	if e == nil {
		return
	}
	h.log.Event("enroll-page", "id", id, "name", e.Name, "from", from)
	h.render(w, http.StatusOK, h.formPage(e, r.UserAgent(), ""))
}

// csrfToken binds the form to its enrollment: an HMAC of the ID under the
// enrollment's own key, which only the CA directory holds.
func csrfToken(e *ca.Enrollment) string {
	m := hmac.New(sha256.New, e.CSRFKey)
	io.WriteString(m, "minica enrollment form v1\x00"+e.ID)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// formFields are the only fields an enrollment form posts: nothing in it
// can name another person or change the certificate.
var formFields = map[string]bool{"csrf": true, "action": true, "password": true, "password2": true, "format": true}

// servePost handles the form: "generate" shows a generated password,
// "download" issues the certificate and sends the bundle.
func (h *Enroller) servePost(w http.ResponseWriter, r *http.Request, token, id, from string) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		h.m.refused.Add(1)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.log.Event("enroll-form-refused", "id", id, "from", from, "reason", "too-large")
			h.render(w, http.StatusRequestEntityTooLarge, &pageData{Kind: "error", Title: "Form too large", Message: "The form was larger than this page ever sends."})
			return
		}
		h.log.Event("enroll-form-refused", "id", id, "from", from, "reason", "malformed")
		h.render(w, http.StatusBadRequest, &pageData{Kind: "error", Title: "Bad form", Message: "The form could not be read. Open the link again."})
		return
	}
	if why := pagesec.CrossOrigin(r); why != "" {
		h.m.refused.Add(1)
		h.log.Event("enroll-form-refused", "id", id, "from", from, "reason", why)
		h.render(w, http.StatusForbidden, &pageData{Kind: "error", Title: "Form refused", Message: "The form was sent from another site. Open the link again and use its page."})
		return
	}
	for k, v := range r.PostForm {
		if !formFields[k] || len(v) != 1 {
			h.m.refused.Add(1)
			h.log.Event("enroll-form-refused", "id", id, "from", from, "reason", "unexpected-field")
			h.render(w, http.StatusBadRequest, &pageData{Kind: "error", Title: "Bad form", Message: "The form held fields this page never sends. Open the link again."})
			return
		}
	}
	e := h.lookup(w, token, id, from)
	if e == nil {
		return
	}
	if !hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(csrfToken(e))) {
		h.m.refused.Add(1)
		h.log.Event("enroll-form-refused", "id", id, "from", from, "reason", "csrf")
		h.render(w, http.StatusForbidden, &pageData{Kind: "error", Title: "Form refused", Message: "The form did not come from this enrollment's page. Open the link again."})
		return
	}
	format, ok := parseBundleFormat(r.PostForm.Get("format"))
	if !ok {
		h.render(w, http.StatusBadRequest, h.formPage(e, r.UserAgent(), "Choose one of the file types below."))
		return
	}
	switch r.PostForm.Get("action") {
	case "generate":
		pw, err := formats.GeneratePassword()
		if err != nil {
			h.render(w, http.StatusInternalServerError, &pageData{Kind: "error", Title: "Error", Message: "No password could be generated. Try again."})
			return
		}
		h.log.Event("enroll-password-generated", "id", id, "name", e.Name, "from", from)
		p := h.formPage(e, r.UserAgent(), "")
		p.Kind, p.Generated = "generated", pw
		p.choose(format)
		h.render(w, http.StatusOK, p)
	case "download":
		pw := r.PostForm.Get("password")
		if msg := h.checkPassword(pw, r.PostForm.Get("password2")); msg != "" {
			p := h.formPage(e, r.UserAgent(), msg)
			p.choose(format)
			h.render(w, http.StatusBadRequest, p)
			return
		}
		h.issue(w, r, e, token, id, from, pw, format)
	default:
		h.render(w, http.StatusBadRequest, h.formPage(e, r.UserAgent(), "Choose a password, or let one be generated."))
	}
}

// checkPassword returns what is wrong with a chosen password, or "".
func (h *Enroller) checkPassword(pw, again string) string {
	switch {
	case pw != again:
		return "The two passwords differ. Type the same password twice."
	case len(pw) < h.cfg.MinPasswordLength:
		return fmt.Sprintf("The password is too short: use at least %d characters.", h.cfg.MinPasswordLength)
	case formats.CheckP12Password(pw) != nil:
		return "Use only printable ASCII characters (letters, digits, punctuation): some devices cannot open a file protected with other characters."
	}
	return ""
}

// issue generates the key, burns the token and issues the certificate
// under the CA lock, and sends the bundle: to a browser, in the page that
// says what comes next (readyPage), else as the file. The key lives only
// in this function's memory.
func (h *Enroller) issue(w http.ResponseWriter, r *http.Request, e *ca.Enrollment, token, id, from, password string, format bundleFormat) {
	key, err := h.cfg.CA.EnrollKeyType(e).Generate()
	if err != nil {
		h.fail(w, id, from, err)
		return
	}
	h.mu.Lock()
	unlock, err := h.cfg.CA.Lock(h.cfg.LockTimeout)
	if err != nil {
		h.mu.Unlock()
		h.log.Event("enroll-busy", "id", id, "from", from, "error", err.Error())
		w.Header().Set("Retry-After", "5")
		h.render(w, http.StatusServiceUnavailable, &pageData{Kind: "error", Title: "Busy", Message: "The server is busy. Your link was not used: wait a few seconds and send the form again."})
		return
	}
	issued, spent, err := h.cfg.CA.Enroll(h.cfg.Signer, token, from, key.Public())
	unlock()
	h.mu.Unlock()
	var spentErr *ca.EnrollmentSpentError
	var tooMany *ca.TooManyDevicesError
	switch {
	case errors.As(err, &spentErr), errors.Is(err, ca.ErrEnrollmentUnknown):
		h.refuse(w, spent, id, from)
		return
	case errors.As(err, &tooMany):
		// A sign-in device link (serve/signin): the link stays pending.
		h.m.refused.Add(1)
		h.log.Event("enroll-refused", "id", id, "from", from, "status", "too-many-devices")
		h.render(w, http.StatusConflict, &pageData{Kind: "error", Title: "Too many devices",
			Message: fmt.Sprintf("You already hold %d valid device certificates, the most allowed. Revoke one you no longer use on My certificates (/signin/devices), then come back to this link.", tooMany.Max)})
		return
	case err != nil:
		h.fail(w, id, from, err)
		return
	}
	body, err := h.bundle(format, key, issued, password)
	if err != nil {
		h.fail(w, id, from, fmt.Errorf("certificate %s issued, but building the bundle: %w", issued.Record.Serial, err))
		return
	}
	h.m.issued.Add(1)
	h.log.Event("enroll-issued", "id", id, "name", e.Name, "serial", issued.Record.Serial, "format", format.String(), "from", from)
	if wantsPage(r) && format != bundleMobileconfig {
		h.render(w, http.StatusOK, h.readyPage(e, issued, r.UserAgent(), format, body))
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", format.contentType())
	hd.Set("Content-Disposition", `attachment; filename="`+e.Name+format.suffix()+`"`)
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// wantsPage says whether r comes from a browser's form (it accepts HTML),
// which is then answered with a page that holds the file, rather than
// with the file alone, which leaves the browser on the form with nothing
// said. An Apple profile is always sent as the file: Safari hands it to
// Settings, which says what comes next, and a profile saved from a data:
// link is not known to install on iOS.
func wantsPage(r *http.Request) bool {
	a := r.Header.Get("Accept")
	return strings.Contains(a, "text/html") || strings.Contains(a, "application/xhtml+xml")
}

func (h *Enroller) fail(w http.ResponseWriter, id, from string, err error) {
	h.m.failed.Add(1)
	h.log.Event("enroll-failed", "id", id, "from", from, "error", err.Error())
	h.render(w, http.StatusInternalServerError, &pageData{Kind: "error", Title: "The certificate could not be issued",
		Message: "Something went wrong on the server. Ask the person who sent you the link for a new one."})
}
