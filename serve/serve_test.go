package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/ca"
	"minica/revoke"
	"minica/serve/renew"
)

// Each path of the contract answers with its file and type; nothing else
// of the CA directory is reachable, and odd request targets are refused.
func TestPaths(t *testing.T) {
	f := newFixture(t, nil)
	crlDER := readFile(t, filepath.Join(f.dir, ca.CRLDERFile))
	certPEM := readFile(t, filepath.Join(f.dir, "ca.crt"))
	block, _ := pem.Decode(certPEM)
	tests := []struct {
		target, wantType string
		wantCode         int
		wantBody         []byte
	}{
		{"/ca.crt", "application/pkix-cert", 200, block.Bytes},
		{"/ca.pem", "application/x-pem-file", 200, certPEM},
		{"/chain.pem", "application/x-pem-file", 200, readFile(t, filepath.Join(f.dir, "chain.pem"))},
		{"/crl.der", "application/pkix-crl", 200, crlDER},
		{"/crl.pem", "application/x-pem-file", 200, readFile(t, filepath.Join(f.dir, ca.CRLPEMFile))},
		{"/pki/root.crl", "application/pkix-crl", 200, crlDER}, // the CA's CRL URL
		{"/crl.der?x=1", "application/pkix-crl", 200, crlDER},
		{"/", "", 404, nil},
		{"/ca.key", "", 404, nil},
		{"/settings.json", "", 404, nil},
		{"/crlnumber", "", 404, nil},
		{"/lock", "", 404, nil},
		{"/db/", "", 404, nil},
		{"/db/revoked.log", "", 404, nil},
		{"/certs", "", 404, nil},
		{"/CA.CRT", "", 404, nil},
		{"/ca.crt/", "", 404, nil},
		{"/ocsp", "", 404, nil}, // no responder configured
		{"/ocsp/MEIwQDA", "", 404, nil},
		{"/crl.der/../ca.key", "", 400, nil},
		{"/../ca.key", "", 400, nil},
		{"/./ca.crt", "", 400, nil},
		{"/%63a.key", "", 400, nil},
		{"/ca%2ekey", "", 400, nil},
		{"/ca.crt%00", "", 400, nil},
		{"/%2e%2e/ca.key", "", 400, nil},
		{"//ca.crt", "", 400, nil},
		{`/ca.crt\..\ca.key`, "", 400, nil},
		{"http://pki.example.com/ca.crt", "", 400, nil},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			rec := f.do(t, http.MethodGet, tt.target)
			if rec.Code != tt.wantCode {
				t.Fatalf("GET %s = %d; want %d (%s)", tt.target, rec.Code, tt.wantCode, rec.Body)
			}
			if tt.wantCode != 200 {
				if strings.Contains(rec.Body.String(), "PRIVATE KEY") {
					t.Fatalf("GET %s leaked a key", tt.target)
				}
				return
			}
			if got := rec.Header().Get("Content-Type"); got != tt.wantType {
				t.Errorf("Content-Type = %q; want %q", got, tt.wantType)
			}
			if got := rec.Body.Bytes(); string(got) != string(tt.wantBody) {
				t.Errorf("body = %d bytes; want the %d bytes of the file", len(got), len(tt.wantBody))
			}
			if got := rec.Header().Get("Content-Length"); got != fmt.Sprint(len(tt.wantBody)) {
				t.Errorf("Content-Length = %q; want %d", got, len(tt.wantBody))
			}
		})
	}
}

// Only GET and HEAD are answered; other methods get 405 with Allow, and a
// HEAD gets the headers of the GET without the body.
func TestMethods(t *testing.T) {
	f := newFixture(t, nil)
	for _, method := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PROPFIND", "MKCOL", "FOO"} {
		for _, target := range []string{"/crl.der", "/ca.crt", "/healthz", "/pki/root.crl"} {
			rec := f.do(t, method, target)
			if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s = %d, Allow %q; want 405, GET, HEAD", method, target, rec.Code, rec.Header().Get("Allow"))
			}
		}
	}
	get, head := f.do(t, "GET", "/crl.der"), f.do(t, "HEAD", "/crl.der")
	if head.Code != 200 || head.Body.Len() != 0 || head.Header().Get("Content-Length") != get.Header().Get("Content-Length") ||
		head.Header().Get("ETag") != get.Header().Get("ETag") {
		t.Errorf("HEAD = %d, %d bytes, Content-Length %q, ETag %q; want 200, none, as GET: %q, %q", head.Code, head.Body.Len(),
			head.Header().Get("Content-Length"), head.Header().Get("ETag"), get.Header().Get("Content-Length"), get.Header().Get("ETag"))
	}
}

// The ETag is "sha256:HEX" of the DER, Last-Modified the thisUpdate; both
// validators give 304; Cache-Control never reaches past nextUpdate nor
// beyond MaxAge.
func TestCaching(t *testing.T) {
	f := newFixture(t, nil)
	crl := f.srv.CRL()
	sum := sha256.Sum256(readFile(t, filepath.Join(f.dir, ca.CRLDERFile)))
	etag := `"sha256:` + hex.EncodeToString(sum[:]) + `"`
	lastMod := crl.ThisUpdate().UTC().Format(http.TimeFormat)
	rec := f.do(t, "GET", "/crl.der")
	if got := rec.Header().Get("ETag"); got != etag {
		t.Fatalf("ETag = %s; want %s", got, etag)
	}
	if got := rec.Header().Get("Last-Modified"); got != lastMod {
		t.Fatalf("Last-Modified = %s; want %s", got, lastMod)
	}
	before := crl.ThisUpdate().Add(-time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name   string
		header []string
		want   int
	}{
		{"no validator", nil, 200},
		{"matching etag", []string{"If-None-Match", etag}, 304},
		{"weak form", []string{"If-None-Match", "W/" + etag}, 304},
		{"in a list", []string{"If-None-Match", `"sha256:00", ` + etag}, 304},
		{"star", []string{"If-None-Match", "*"}, 304},
		{"other etag", []string{"If-None-Match", `"sha256:00"`}, 200},
		{"other etag wins over a matching date", []string{"If-None-Match", `"x"`, "If-Modified-Since", lastMod}, 200},
		{"modified since thisUpdate", []string{"If-Modified-Since", lastMod}, 304},
		{"modified since before", []string{"If-Modified-Since", before}, 200},
		{"bad date", []string{"If-Modified-Since", "yesterday"}, 200},
	}
	for _, tt := range tests {
		for _, target := range []string{"/crl.der", "/crl.pem", "/pki/root.crl"} {
			rec := f.do(t, "GET", target, tt.header...)
			if rec.Code != tt.want {
				t.Errorf("%s: GET %s = %d; want %d", tt.name, target, rec.Code, tt.want)
			}
			if rec.Code == 304 && (rec.Body.Len() != 0 || rec.Header().Get("ETag") != etag || rec.Header().Get("Cache-Control") == "") {
				t.Errorf("%s: 304 with %d bytes, ETag %q, Cache-Control %q; want no body, the ETag and Cache-Control", tt.name, rec.Body.Len(),
					rec.Header().Get("ETag"), rec.Header().Get("Cache-Control"))
			}
		}
	}
	if rec := f.do(t, "GET", "/ca.crt", "If-None-Match", f.do(t, "GET", "/ca.crt").Header().Get("ETag")); rec.Code != 304 {
		t.Errorf("GET /ca.crt with its ETag = %d; want 304", rec.Code)
	}
	block, _ := pem.Decode(readFile(t, filepath.Join(f.dir, "ca.crt")))
	certSum := sha256.Sum256(block.Bytes)
	if got, want := f.do(t, "GET", "/ca.pem").Header().Get("ETag"), `"sha256:`+hex.EncodeToString(certSum[:])+`"`; got != want {
		t.Errorf("ETag of /ca.pem = %s; want %s (of the DER)", got, want)
	}

	// The CRL of the fixture lives one hour: thisUpdate is start.
	ages := []struct {
		at   time.Duration
		want string
	}{
		{0, "max-age=300"},
		{time.Hour - 100*time.Second, "max-age=100"},
		{time.Hour - 500*time.Millisecond, "max-age=0"},
		{time.Hour, "max-age=0, no-cache"},
		{2 * time.Hour, "max-age=0, no-cache"},
	}
	for _, a := range ages {
		f.clock.Set(crl.ThisUpdate().Add(a.at))
		if got := f.do(t, "GET", "/crl.der").Header().Get("Cache-Control"); got != a.want {
			t.Errorf("Cache-Control at thisUpdate+%s = %q; want %q", a.at, got, a.want)
		}
	}
}

// A CRL that another process publishes is served after the next poll,
// and OnCRLChange hears of it; a crl.der that is a planted symlink to the
// key, the key itself, or an older CRL (a replay) is refused, logged and
// counted, and the last good CRL stays.
func TestFollowsPublishedCRL(t *testing.T) {
	changes := 0
	f := newFixture(t, func(c *Config) { c.OnCRLChange = func() { changes++ } })
	first := f.srv.CRL()
	f.srv.check()
	if changes != 0 {
		t.Fatalf("OnCRLChange called %d times without a change", changes)
	}
	info := f.publishElsewhere(t)
	f.srv.check()
	if got := f.srv.CRL().Number(); got.Cmp(info.Number) != 0 || changes != 1 {
		t.Fatalf("served CRL %s after another process published %s (%d changes); want it, 1 change", got, info.Number, changes)
	}
	good := f.do(t, "GET", "/crl.der").Body.String()
	derFile := filepath.Join(f.dir, ca.CRLDERFile)
	older := readFile(t, derFile)

	key := readFile(t, filepath.Join(f.dir, "ca.key"))
	plant := []struct {
		name  string
		plant func()
	}{
		{"symlink to the key", func() { os.Symlink("ca.key", derFile) }},
		{"symlink to crl.pem", func() { os.Symlink("crl.pem", derFile) }},
		{"copy of the key", func() { os.WriteFile(derFile, key, 0o644) }},
		{"garbage", func() { os.WriteFile(derFile, []byte("<html>oops</html>"), 0o644) }},
	}
	for i, p := range plant {
		os.Remove(derFile)
		p.plant()
		f.srv.check()
		rec := f.do(t, "GET", "/crl.der")
		if rec.Body.String() != good || strings.Contains(rec.Body.String(), "PRIVATE KEY") {
			t.Errorf("%s: GET /crl.der served %d other bytes; want the last good CRL", p.name, rec.Body.Len())
		}
		if want := fmt.Sprintf("minica_serve_crl_load_failures_total %d", i+1); !hasLine(f.metrics(t), want) {
			t.Errorf("%s: metrics lack %q", p.name, want)
		}
	}
	if !strings.Contains(f.logText(), "crl-refused error=") || !strings.Contains(f.logText(), "not a regular file") {
		t.Errorf("log lacks the refusals:\n%s", f.logText())
	}

	// A replay: a newer CRL, then the older one back.
	os.Remove(derFile)
	newer := f.publishElsewhere(t)
	f.srv.check()
	if err := os.WriteFile(derFile+".tmp", older, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Rename(derFile+".tmp", derFile)
	f.srv.check()
	if got := f.srv.CRL().Number(); got.Cmp(newer.Number) != 0 {
		t.Errorf("served CRL %s after a replay of %s; want %s kept", got, first.Number(), newer.Number)
	}
	if !strings.Contains(f.logText(), revoke.ErrLowerNumber.Error()) {
		t.Errorf("log lacks the lower number:\n%s", f.logText())
	}
}

// Past half its lifetime the CRL is re-signed under the CA lock, with a
// number above the last; a lock held by another process makes the attempt
// fail, with a warning in /healthz and /metrics, retried after a backoff.
func TestResignsAtHalfLife(t *testing.T) {
	f := newFixture(t, nil)
	first := f.srv.CRL()
	f.clock.Set(start.Add(29 * time.Minute))
	f.srv.check()
	if f.srv.CRL().Number().Cmp(first.Number()) != 0 {
		t.Fatalf("re-signed before half the lifetime")
	}

	other := f.other(t)
	unlock, err := other.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Set(start.Add(30 * time.Minute))
	f.srv.check()
	if f.srv.CRL().Number().Cmp(first.Number()) != 0 {
		t.Fatalf("re-signed while another process held the lock")
	}
	h := f.do(t, "GET", "/healthz")
	if h.Code != 200 || !strings.HasPrefix(h.Body.String(), "ok: warning: re-signing the CRL failed (") {
		t.Errorf("/healthz = %d %q; want 200 and a warning", h.Code, h.Body)
	}
	m := f.metrics(t)
	for _, want := range []string{"minica_serve_crl_resign_failures_total 1", "minica_serve_crl_lapse_warning 1", "minica_serve_can_sign 1"} {
		if !hasLine(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	f.clock.Set(start.Add(30*time.Minute + time.Second))
	f.srv.check() // within the backoff: no attempt
	if !hasLine(f.metrics(t), "minica_serve_crl_resign_failures_total 1") {
		t.Errorf("re-sign attempted again within the backoff")
	}
	unlock()
	f.clock.Set(start.Add(31 * time.Minute))
	f.srv.check()
	got := f.srv.CRL()
	if got.Number().Cmp(first.Number()) <= 0 || !got.ThisUpdate().Equal(start.Add(31*time.Minute)) {
		t.Fatalf("after the lock was freed: CRL %s of %s; want a higher number signed at %s", got.Number(), got.ThisUpdate(), start.Add(31*time.Minute))
	}
	if got.NextUpdate().Sub(got.ThisUpdate()) != time.Hour {
		t.Errorf("re-signed CRL lives %s; want the CA's CRL lifetime, 1h", got.NextUpdate().Sub(got.ThisUpdate()))
	}
	if !hasLine(f.metrics(t), "minica_serve_crl_resigns_total 1") || !hasLine(f.metrics(t), "minica_serve_crl_lapse_warning 0") {
		t.Errorf("metrics after the re-sign:\n%s", f.metrics(t))
	}
	// The published files are those of `minica crl`: the next process sees it.
	if pub, err := f.other(t).ReadPublishedCRL(); err != nil || pub.CRL.Number().Cmp(got.Number()) != 0 {
		t.Errorf("crl.der holds %v, %v; want the re-signed CRL", pub, err)
	}
}

// Without the key, serve warns from the half-life on (log, /healthz,
// /metrics) and /healthz fails past nextUpdate.
func TestNoSignWarns(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Signer = nil })
	first := f.srv.CRL().Number()
	steps := []struct {
		at        time.Duration
		wantCode  int
		wantFirst string
		wantWarn  string
	}{
		{10 * time.Minute, 200, "ok", "0"},
		{30 * time.Minute, 200, "ok: warning: serve runs with --no-sign and cannot re-sign the CRL: it lapses at 2030-01-02T04:04:05Z unless 'minica crl' publishes one", "1"},
		{61 * time.Minute, 503, "unavailable: the CRL expired at 2030-01-02T04:04:05Z", "1"},
	}
	for _, st := range steps {
		f.clock.Set(start.Add(st.at))
		f.srv.check()
		rec := f.do(t, "GET", "/healthz")
		first, _, _ := strings.Cut(rec.Body.String(), "\n")
		if rec.Code != st.wantCode || first != st.wantFirst {
			t.Errorf("at +%s: /healthz = %d %q; want %d %q", st.at, rec.Code, first, st.wantCode, st.wantFirst)
		}
		if !strings.Contains(rec.Body.String(), "can-sign: false\n") {
			t.Errorf("at +%s: /healthz lacks can-sign: false:\n%s", st.at, rec.Body)
		}
		if m := f.metrics(t); !hasLine(m, "minica_serve_crl_lapse_warning "+st.wantWarn) || !hasLine(m, "minica_serve_can_sign 0") {
			t.Errorf("at +%s: metrics lack the lapse warning %s:\n%s", st.at, st.wantWarn, m)
		}
	}
	if n := strings.Count(f.logText(), "crl-will-lapse "); n != 1 {
		t.Errorf("log holds %d crl-will-lapse lines; want 1:\n%s", n, f.logText())
	}
	if f.srv.CRL().Number().Cmp(first) != 0 {
		t.Errorf("a server without the key re-signed")
	}
}

// The OCSP responder of Config.OCSP answers /ocsp, /ocsp/... and the path
// of the CA's OCSP URL, every method and encoded paths included; it hears
// of each new CRL and adds its metrics.
func TestOCSPMount(t *testing.T) {
	changes := 0
	ocsp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/ocsp-response")
		fmt.Fprintf(w, "ocsp %s %s", r.Method, r.URL.EscapedPath())
	})
	f := newFixture(t, func(c *Config) {
		c.OCSP = ocsp
		c.OCSPURL = "http://pki.example.com/status"
		c.OnCRLChange = func() { changes++ }
		c.ExtraMetrics = func(w io.Writer) { io.WriteString(w, "minica_serve_ocsp_responses_total{status=\"good\"} 3\n") }
	})
	for _, tt := range []struct{ method, target string }{
		{"POST", "/ocsp"},
		{"GET", "/ocsp/MFMwUTBPME0wSzAJBgUrDgMCGgUABBQ%2Fabc%3D"},
		{"GET", "/ocsp/MFMw/UTBP+ME0w=="},
		{"POST", "/status"},
		{"GET", "/status/MFMwUTBPME0wSzAJBgUrDgMCGgUABBQ"},
		{"GET", "/status/MFMw/UTBP+ME0w=="},
		{"POST", "/"},
		{"PUT", "/ocsp"},
	} {
		rec := f.do(t, tt.method, tt.target)
		if want := "ocsp " + tt.method + " " + tt.target; rec.Code != 200 || rec.Body.String() != want {
			t.Errorf("%s %s = %d %q; want the responder's %q", tt.method, tt.target, rec.Code, rec.Body, want)
		}
	}
	f.publishElsewhere(t)
	f.srv.check()
	if changes != 1 {
		t.Errorf("OnCRLChange called %d times after a new CRL; want 1", changes)
	}
	m := f.metrics(t)
	for _, want := range []string{`minica_serve_ocsp_responses_total{status="good"} 3`, `minica_serve_requests_total{endpoint="ocsp",code="200"} 8`} {
		if !hasLine(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, m)
		}
	}
}

// The renewal handler answers /renew and /renew/keygen, its metrics
// follow the Server's, and its requests are counted under "renew";
// without one, both paths answer 404 with the reason renewal-disabled.
func TestRenewMount(t *testing.T) {
	rn := &fakeRenewer{}
	f := newFixture(t, func(c *Config) { c.Renew = rn })
	for _, path := range []string{renew.Path, renew.KeygenPath} {
		if rec := f.do(t, http.MethodPost, path); rec.Code != 200 || rec.Body.String() != "renewed "+path {
			t.Errorf("POST %s = %d %q; want the renewal handler's answer", path, rec.Code, rec.Body)
		}
	}
	m := f.metrics(t)
	for _, want := range []string{"minica_serve_renewals_total 2", `minica_serve_requests_total{endpoint="renew",code="200"} 2`} {
		if !hasLine(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, m)
		}
	}
	plain := newFixture(t, nil)
	for _, path := range []string{renew.Path, renew.KeygenPath} {
		rec := plain.do(t, http.MethodPost, path)
		var p struct{ Reason string }
		json.Unmarshal(rec.Body.Bytes(), &p)
		if rec.Code != 404 || rec.Header().Get("Content-Type") != renew.ProblemType || p.Reason != renew.RefuseRenewalOff {
			t.Errorf("POST %s without a renewal handler = %d %q; want 404 %s", path, rec.Code, rec.Body, renew.RefuseRenewalOff)
		}
	}
}

// fakeRenewer answers every request with its path and counts them.
type fakeRenewer struct{ n int }

func (r *fakeRenewer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.n++
	io.WriteString(w, "renewed "+req.URL.Path)
}

func (r *fakeRenewer) WriteMetrics(w io.Writer) {
	fmt.Fprintf(w, "minica_serve_renewals_total %d\n", r.n)
}

// With SeparateOps, /healthz and /metrics leave Handler for OpsHandler,
// which serves nothing else.
func TestSeparateOps(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.SeparateOps = true })
	for _, p := range []string{"/healthz", "/metrics"} {
		if rec := f.do(t, "GET", p); rec.Code != 404 {
			t.Errorf("GET %s on Handler = %d; want 404", p, rec.Code)
		}
		rec := httptest.NewRecorder()
		f.srv.OpsHandler().ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		if rec.Code != 200 {
			t.Errorf("GET %s on OpsHandler = %d; want 200", p, rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	f.srv.OpsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/crl.der", nil))
	if rec.Code != 404 {
		t.Errorf("GET /crl.der on OpsHandler = %d; want 404", rec.Code)
	}
}

// Watch polls every PollInterval (250 ms by default, so that a CRL
// published elsewhere is served within a second) and stops with its
// context.
func TestWatchPolls(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { f.srv.Watch(ctx); close(stopped) }()
	if d := f.timers.await(t); d != DefaultPollInterval || d > time.Second/3 {
		t.Fatalf("Watch polls every %s; want %s", d, DefaultPollInterval)
	}
	info := f.publishElsewhere(t)
	f.timers.fireAll()
	f.timers.await(t) // the next round's timer: this round's check is done
	if got := f.srv.CRL().Number(); got.Cmp(info.Number) != 0 {
		t.Fatalf("served CRL %s one poll after %s was published", got, info.Number)
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Watch still running 5s after its context was done")
	}
}

// Without a valid CRL, New publishes one when it holds the key, and fails
// without it.
func TestNewWithoutCRL(t *testing.T) {
	f := newFixture(t, nil)
	der := filepath.Join(f.dir, ca.CRLDERFile)
	os.Remove(der)
	if _, err := New(Config{CA: f.ca, Now: f.clock.Now}); err == nil || !strings.Contains(err.Error(), "serving the CRL: no CRL published in ") {
		t.Fatalf("New() without the key or a CRL: error = %v; want no CRL published", err)
	}
	srv, err := New(Config{CA: f.ca, Signer: f.signer, Now: f.clock.Now})
	if err != nil {
		t.Fatalf("New() with the key and no CRL: %v", err)
	}
	pub, err := f.other(t).ReadPublishedCRL()
	if err != nil || pub.CRL.Number().Cmp(srv.CRL().Number()) != 0 {
		t.Fatalf("published %v, %v; want the CRL New serves", pub, err)
	}
}

// Close to nextUpdate, failed re-signs are retried within a quarter of the
// time left, not after the whole backoff.
func TestResignRetryNearNextUpdate(t *testing.T) {
	f := newFixture(t, nil)
	unlock, err := f.other(t).Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	at := start.Add(time.Hour - 8*time.Second)
	for i, step := range []time.Duration{0, time.Second, time.Second} {
		at = at.Add(step)
		f.clock.Set(at)
		f.srv.check()
		want := []string{"1", "1", "2"}[i]
		if !hasLine(f.metrics(t), "minica_serve_crl_resign_failures_total "+want) {
			t.Fatalf("at nextUpdate-%s: failures not %s:\n%s", start.Add(time.Hour).Sub(at), want, f.metrics(t))
		}
	}
	if !strings.Contains(f.logText(), "retry_in=2s") {
		t.Errorf("log lacks retry_in=2s:\n%s", f.logText())
	}
}

// A CRL of the CA with a higher number but past its nextUpdate (signed
// with a clock behind) never replaces the current one: serve, which
// cannot re-sign with --no-sign, would hand it to every replica.
func TestRefusesExpiredPublishedCRL(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Signer = nil })
	cur := f.srv.CRL()
	c := f.other(t)
	c.Now = func() time.Time { return f.clock.Now().Add(-3 * time.Hour) } // the CRL lives an hour
	unlock, err := c.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.PublishCRL(f.signer, 0)
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	if info.Number.Cmp(cur.Number()) <= 0 || !info.NextUpdate.Before(f.clock.Now()) {
		t.Fatalf("published CRL %s, next update %s; want a higher number than %s, expired", info.Number, info.NextUpdate, cur.Number())
	}
	f.srv.check()
	if got := f.srv.CRL().Number(); got.Cmp(cur.Number()) != 0 {
		t.Fatalf("served CRL %s after an expired one was published; want %s kept", got, cur.Number())
	}
	if !strings.Contains(f.logText(), "crl-refused error=") || !strings.Contains(f.logText(), revoke.ErrExpired.Error()) {
		t.Errorf("log lacks the refusal:\n%s", f.logText())
	}
}

// A crl.der replaced by a copy of the CRL served (the same number, a new
// file) changes nothing: no refusal logged or counted, the CRL stays.
func TestSameNumberPublishedCRLIsNoOp(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Signer = nil })
	cur := f.srv.CRL()
	crlFile := filepath.Join(f.dir, ca.CRLDERFile)
	der, err := os.ReadFile(crlFile)
	if err != nil {
		t.Fatal(err)
	}
	copyFile := crlFile + ".copy"
	if err := os.WriteFile(copyFile, der, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(copyFile, crlFile); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		f.srv.check()
	}
	if got := f.srv.CRL().Number(); got.Cmp(cur.Number()) != 0 {
		t.Fatalf("served CRL %s; want %s kept", got, cur.Number())
	}
	if strings.Contains(f.logText(), "crl-refused") {
		t.Errorf("a copy of the CRL served was refused:\n%s", f.logText())
	}
	if !hasLine(f.metrics(t), "minica_serve_crl_load_failures_total 0") {
		t.Errorf("load failures counted:\n%s", f.metrics(t))
	}
}
