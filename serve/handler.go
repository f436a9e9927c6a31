package serve

import (
	"io"
	"log"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"minica/revoke"
	"minica/serve/enroll"
	"minica/serve/renew"
)

var discardLog = log.New(io.Discard, "", 0)

// Endpoint labels of the requests_total metric.
const (
	epCRL      = "crl.der"
	epCRLPEM   = "crl.pem"
	epCRLURL   = "crl-url"
	epDelta    = "crl-delta.der"
	epDeltaPEM = "crl-delta.pem"
	epOCSP     = "ocsp"
	epRenew    = "renew"
	epBoot     = "bootstrap"
	epHealth   = "healthz"
	epMetrics  = "metrics"
	epOther    = "other"
	epEnroll   = "enroll"
	epACME     = "acme"
	epSignin   = "signin"
)

func isOps(p string) bool { return p == "/healthz" || p == "/metrics" }

// Handler answers every path of the contract (see the package doc):
// nothing else is reachable, and nothing is read from the CA directory on
// a request.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.route(w, r, !s.cfg.SeparateOps) })
}

// OpsHandler answers /healthz and /metrics only.
func (s *Server) OpsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isOps(r.URL.Path) {
			sw := &statusWriter{ResponseWriter: w}
			plain(sw, http.StatusNotFound, "not found")
			s.m.request(epOther, sw.status)
			return
		}
		s.route(w, r, true)
	})
}

func (s *Server) route(w http.ResponseWriter, r *http.Request, ops bool) {
	sw := &statusWriter{ResponseWriter: w}
	ep := s.dispatch(sw, r, ops)
	s.m.request(ep, sw.status)
}

// dispatch answers r and returns its endpoint label.
func (s *Server) dispatch(w *statusWriter, r *http.Request, ops bool) string {
	w.Header()["X-Content-Type-Options"] = hdrNosniff
	path := r.URL.Path
	// Whatever answers a path under /enroll (Config.Enroll, or a refusal
	// below), its URL may hold a token: never cached, never a referrer.
	if strings.HasPrefix(path, "/enroll") {
		enroll.SetHeaders(w)
	}
	// Sign-in's start page is GET /, which an OCSP responder at the root
	// would otherwise take for a request.
	signin := s.cfg.Signin != nil && isSignin(r.Method, path)
	// OCSP GET requests carry base64 in the path ('/', '+', '=' and their
	// percent-encodings): the responder parses them itself.
	// `openssl ocsp -url http://HOST:PORT` posts to "/".
	if !signin && s.isOCSP(r.Method, path) {
		if s.cfg.OCSP == nil {
			plain(w, http.StatusNotFound, "not found: this server has no OCSP responder")
		} else {
			s.cfg.OCSP.ServeHTTP(w, r)
		}
		return epOCSP
	}
	if why := badTarget(r); why != "" {
		plain(w, http.StatusBadRequest, "bad request: "+why)
		return epOther
	}
	if signin {
		s.cfg.Signin.ServeHTTP(w, r)
		return epSignin
	}
	if strings.HasPrefix(path, "/enroll/") && s.cfg.Enroll != nil {
		s.cfg.Enroll.ServeHTTP(w, r)
		return epEnroll
	}
	if strings.HasPrefix(path, "/acme/") {
		if s.cfg.ACME == nil {
			plain(w, http.StatusNotFound, "not found: this serve does not answer ACME (serve --acme on --listen-tls)")
		} else {
			s.cfg.ACME.ServeHTTP(w, r)
		}
		return epACME
	}
	if path == renew.Path || path == renew.KeygenPath {
		if s.cfg.Renew == nil {
			renew.ServeDisabled(w, r)
		} else {
			s.cfg.Renew.ServeHTTP(w, r)
		}
		return epRenew
	}
	if path == renew.TokenPath {
		if s.cfg.Renew == nil {
			renew.ServeBootstrapDisabled(w, r)
		} else {
			s.cfg.Renew.ServeHTTP(w, r)
		}
		return epBoot
	}
	ep, serve := s.lookup(path, ops)
	if serve == nil {
		plain(w, http.StatusNotFound, "not found")
		return epOther
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		plain(w, http.StatusMethodNotAllowed, "method not allowed: GET and HEAD only")
		return ep
	}
	serve(w, r)
	return ep
}

// isSignin reports whether a request of method to path goes to sign-in:
// GET and HEAD of "/" (POST "/" is OCSP's), anything under /signin/.
func isSignin(method, path string) bool {
	return strings.HasPrefix(path, "/signin/") || (path == "/" && (method == http.MethodGet || method == http.MethodHead))
}

// isOCSP reports whether a request of method to path goes to the OCSP
// responder, on the main listeners as on the dedicated one.
func (s *Server) isOCSP(method, path string) bool {
	return (path == "/" && method == http.MethodPost) || s.ocsp[path] || slices.ContainsFunc(s.ocspPre, func(p string) bool { return strings.HasPrefix(path, p) })
}

// lookup returns the endpoint label and the handler of path, or nil.
func (s *Server) lookup(path string, ops bool) (string, http.HandlerFunc) {
	crl := func(q crlQuery) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { s.serveCRL(w, r, q) }
	}
	switch {
	case path == "/crl.der":
		return epCRL, crl(crlQuery{})
	case path == "/crl.pem":
		return epCRLPEM, crl(crlQuery{asPEM: true})
	case s.crlPath[path]:
		return epCRLURL, crl(crlQuery{})
	case path == "/crl-delta.der":
		return epDelta, crl(crlQuery{deltaOnly: true})
	case path == "/crl-delta.pem":
		return epDeltaPEM, crl(crlQuery{deltaOnly: true, asPEM: true})
	case s.rootCRL[path] != "":
		ep := s.rootCRL[path]
		return ep, func(w http.ResponseWriter, r *http.Request) { s.serveRootCRL(w, r, ep == epRootCRLPEM) }
	case ops && path == "/healthz":
		return epHealth, s.serveHealth
	case ops && path == "/metrics":
		return epMetrics, s.serveMetrics
	}
	if res := s.static[path]; res != nil {
		return res.endpoint, func(w http.ResponseWriter, r *http.Request) {
			writeConditional(w, r, res.contentType, res.etag, res.lastModified, res.body, "max-age="+strconv.Itoa(int(MaxAge/time.Second)))
		}
	}
	return "", nil
}

// badTarget says why a request target is refused, or "" when it is fine:
// only an origin-form path in its plain spelling is answered, so that no
// decoding trick reaches a path the table does not list.
func badTarget(r *http.Request) string {
	raw := r.RequestURI
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		raw = raw[:i]
	}
	switch {
	case !strings.HasPrefix(raw, "/"):
		return "only origin-form paths are served"
	case strings.ContainsAny(raw, "%\\"):
		return "encoded paths are not served"
	case strings.Contains(raw, "//"):
		return "empty path segments are not served"
	}
	for seg := range strings.SplitSeq(raw, "/") {
		if seg == "." || seg == ".." {
			return "dot segments are not served"
		}
	}
	return ""
}

// hdrNosniff is the value of X-Content-Type-Options on every answer,
// shared: net/http only reads it.
var hdrNosniff = []string{"nosniff"}

// plain writes a short text answer.
func plain(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	io.WriteString(w, msg+"\n")
}

// serveCRL answers a request for a CRL, as DER or PEM: the answer q
// picks (the delta CRL to a client whose Minica-CRL-Base it applies to),
// held back for a long poll (Prefer: wait=N) while it is the client's
// copy.
func (s *Server) serveCRL(w http.ResponseWriter, r *http.Request, q crlQuery) {
	if !q.deltaOnly {
		q.base = crlBase(r.Header)
		// A cache in front must not hand a delta CRL to another client.
		w.Header().Add("Vary", hdrCRLBase)
	}
	cur := s.cur.Load()
	ds := cur.delta.Load()
	ans := q.pick(cur, ds)
	wait, prefer := preferWait(r.Header)
	if prefer {
		wait = min(wait, s.cfg.MaxWait)
		if wait > 0 && ans.current(r) {
			gone := false
			if s.waiters.Add(1) <= int64(s.cfg.MaxWaiters) {
				ans, gone = s.waitNewer(r, q, cur, ds, wait)
			} else {
				wait = 0
				s.m.waitersRefused.Add(1)
			}
			s.waiters.Add(-1)
			if gone {
				return
			}
		}
		w.Header().Set("Preference-Applied", "wait="+strconv.Itoa(int(wait/time.Second)))
		w.Header().Add("Vary", "Prefer")
	}
	if ans.body == nil {
		plain(w, http.StatusNotFound, "not found: no delta CRL applies to the current CRL")
		return
	}
	if ans.delta != nil {
		w.Header().Set(hdrDeltaCRL, "base="+ans.delta.baseText)
	}
	b := ans.body
	cc := crlCacheControl(b.crl, s.cfg.Now())
	var sent int
	if q.asPEM {
		sent = writeConditionalFunc(w, r, "application/x-pem-file", b.etag, b.crl.ThisUpdate(), b.pemLen(), b.writePEM, cc)
	} else {
		sent = writeConditional(w, r, "application/pkix-crl", b.etag, b.crl.ThisUpdate(), b.der, cc)
	}
	s.m.crlSent(ans.delta != nil, sent)
}

// waitNewer waits up to wait for the answer to q to change from what it
// is with cur and ds, the state the caller picked it from, and returns
// the answer then: the new one, or the same when the wait ran out or the
// server shuts down; gone when the client went away. A new complete CRL
// wakes every long poll, a new delta CRL only those of clients that
// follow delta CRLs; one woken whose answer is still its copy waits on.
func (s *Server) waitNewer(r *http.Request, q crlQuery, cur *published, ds *deltaState, wait time.Duration) (ans crlAnswer, gone bool) {
	timer, stop := s.cfg.NewTimer(wait)
	defer stop()
	ans = q.pick(cur, ds)
	// Each round waits for a change of what is served: the timer bounds them.
	for ans.current(r) {
		var deltaChanged chan struct{} // nil: never ready
		if q.followsDelta() {
			deltaChanged = ds.changed
		}
		select {
		case <-cur.changed:
		case <-deltaChanged:
		case <-timer:
			return ans, false
		case <-s.done:
			return ans, false
		case <-r.Context().Done():
			return crlAnswer{}, true
		}
		cur = s.cur.Load()
		ds = cur.delta.Load()
		ans = q.pick(cur, ds)
	}
	return ans, false
}

// crlCacheControl is max-age = the seconds left to nextUpdate, at most
// MaxAge; past nextUpdate, no-cache.
func crlCacheControl(crl *revoke.CRL, now time.Time) string {
	left := crl.NextUpdate().Sub(now)
	if left <= 0 {
		return "max-age=0, no-cache"
	}
	return "max-age=" + strconv.Itoa(int(min(left, MaxAge)/time.Second))
}

// preferWait returns the wait=N preference of RFC 7240 section 4.3, and
// whether the request states one. A malformed value is ignored, as the
// RFC asks for preferences a server does not understand.
func preferWait(h http.Header) (time.Duration, bool) {
	for _, line := range h.Values("Prefer") {
		for pref := range strings.SplitSeq(line, ",") {
			tok, _, _ := strings.Cut(pref, ";")
			name, value, ok := strings.Cut(strings.TrimSpace(tok), "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(name), "wait") {
				continue
			}
			value = strings.Trim(strings.TrimSpace(value), `"`)
			n, err := strconv.ParseUint(value, 10, 31)
			if err != nil {
				continue
			}
			return time.Duration(n) * time.Second, true
		}
	}
	return 0, false
}

// notModified applies If-None-Match, or without it If-Modified-Since, to
// a representation with etag and lastModified (RFC 9110 section 13.2.2).
func notModified(r *http.Request, etag string, lastModified time.Time) bool {
	if inm := r.Header.Values("If-None-Match"); len(inm) > 0 {
		for _, line := range inm {
			for tag := range strings.SplitSeq(line, ",") {
				tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
				if tag == "*" || tag == etag {
					return true
				}
			}
		}
		return false
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" {
		t, err := http.ParseTime(ims)
		return err == nil && !lastModified.Truncate(time.Second).After(t)
	}
	return false
}

// writeConditional answers 304 or 200 with the validators and caching of
// the contract; a HEAD gets the headers only. It returns the size of the
// body sent, 0 for none.
func writeConditional(w http.ResponseWriter, r *http.Request, ctype, etag string, lastModified time.Time, body []byte, cacheControl string) int {
	return writeConditionalFunc(w, r, ctype, etag, lastModified, len(body), func(w io.Writer) { w.Write(body) }, cacheControl)
}

// writeConditionalFunc is writeConditional with a body of size bytes that
// write writes.
func writeConditionalFunc(w http.ResponseWriter, r *http.Request, ctype, etag string, lastModified time.Time, size int, write func(io.Writer), cacheControl string) int {
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Last-Modified", lastModified.UTC().Format(http.TimeFormat))
	h.Set("Cache-Control", cacheControl)
	if notModified(r, etag, lastModified) {
		w.WriteHeader(http.StatusNotModified)
		return 0
	}
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(size))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return 0
	}
	write(w)
	return size
}

// statusWriter remembers the status code, for the metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
