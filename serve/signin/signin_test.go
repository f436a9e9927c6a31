package signin

import (
	"crypto/x509"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"software.sslmate.com/src/go-pkcs12"

	"minica/ca"
	"minica/internal/testidp"
	"minica/serve/enroll"
)

// The people of the provider in these tests.
var (
	simon      = testidp.User{Username: "simon", Password: "simon-pw", Email: "simon@example.com", EmailVerified: true, Name: "Simon Zeller", Groups: []string{"staff"}}
	bob        = testidp.User{Username: "bob", Password: "bob-pw", Email: "bob@example.com", EmailVerified: true, Name: "Bob Ma"}
	unverified = testidp.User{Username: "unverified", Password: "u-pw", Email: "u@example.com", EmailVerified: false, Name: "U"}
	outsider   = testidp.User{Username: "outsider", Password: "o-pw", Email: "o@other.org", EmailVerified: true, Name: "O"}
	contractor = testidp.User{Username: "contractor", Password: "c-pw", Email: "c@example.com", EmailVerified: true, Name: "C", Groups: []string{"staff", "contractors"}}
)

const testContact = "the IT desk, it@example.com"

// clock is the real time plus an offset the test moves: the provider's
// tokens carry the real time.
type clock struct{ off atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) Advance(d time.Duration) { c.off.Add(int64(d)) }

// harness is a CA, the real provider on http://localhost, and sign-in
// with enrollment links served over HTTPS on 127.0.0.1: another site.
type harness struct {
	c     *ca.CA // the test's own handle
	clock *clock
	idp   *testidp.Provider
	srv   *httptest.Server
	h     *Handler
	log   *strings.Builder
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	hs := &harness{clock: &clock{}, log: &strings.Builder{}}
	dir := filepath.Join(t.TempDir(), "ca")
	settings := ca.DefaultSettings()
	settings.CRLLifetime = ca.Duration(time.Hour)
	c, err := ca.Init(dir, ca.InitOptions{CommonName: "Test CA", Settings: settings, FirstCRL: true, Now: hs.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Now = hs.clock.Now
	hs.c = c
	signer, err := c.LoadSigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	other := func() *ca.CA {
		o, err := ca.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		o.Now = hs.clock.Now
		return o
	}
	var mux http.ServeMux
	hs.srv = httptest.NewUnstartedServer(&mux)
	redirect := "https://" + hs.srv.Listener.Addr().String() + PathCallback
	hs.idp = testidp.Start(t, testidp.Config{
		Users:   []testidp.User{simon, bob, unverified, outsider, contractor},
		Clients: []testidp.Client{{ID: "minica", Secret: "client-secret", RedirectURIs: []string{redirect}}},
	})
	cfg := Config{
		CA: other(), Signer: signer, Issuer: hs.idp.Issuer(), ClientID: "minica", ClientSecret: "client-secret", RedirectURL: redirect,
		ProviderName: "Example SSO", Contact: testContact, Now: hs.clock.Now, Log: hs.log, ProviderTimeout: 2 * time.Second,
		Mapping:    Mapping{AllowDomains: []string{"example.com"}, GroupsClaim: "groups", DenyGroups: []string{"contractors"}},
		MaxDevices: 3, LockTimeout: 5 * time.Second, Rate: 10000, Burst: 10000, TotalRate: 100000, TotalBurst: 100000,
	}
	if mod != nil {
		mod(&cfg)
	}
	if hs.h, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	en, err := enroll.New(enroll.Config{CA: other(), Signer: signer, Now: hs.clock.Now, LockTimeout: 5 * time.Second, P12Iterations: 1,
		Rate: 10000, Burst: 10000, TotalRate: 100000, TotalBurst: 100000})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/enroll/", en)
	mux.Handle("/", hs.h)
	hs.srv.StartTLS()
	t.Cleanup(hs.srv.Close)
	return hs
}

// browser is a client with its own cookies that follows no redirect.
func (hs *harness) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Transport: hs.srv.Client().Transport, Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type answer struct {
	code int
	loc  string
	body string
}

func do(t *testing.T, c *http.Client, req *http.Request) answer {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("Location"), string(body)}
}

func (hs *harness) get(t *testing.T, c *http.Client, target string) answer {
	t.Helper()
	if strings.HasPrefix(target, "/") {
		target = hs.srv.URL + target
	}
	req, _ := http.NewRequest(http.MethodGet, target, nil)
	return do(t, c, req)
}

// post sends a form as the page's own would (Origin of the site), unless
// origin says another.
func (hs *harness) post(t *testing.T, c *http.Client, path string, form url.Values, origin string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, hs.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin == "" {
		origin = hs.srv.URL
	}
	if origin != "none" {
		req.Header.Set("Origin", origin)
	}
	return do(t, c, req)
}

// callback starts a sign-in in c and signs user in at the provider; it
// returns the redirect back, not yet followed.
func (hs *harness) callback(t *testing.T, c *http.Client, user testidp.User) *url.URL {
	t.Helper()
	a := hs.get(t, c, PathLogin)
	if a.code != http.StatusFound || !strings.HasPrefix(a.loc, hs.idp.Issuer()) {
		t.Fatalf("GET %s = %d to %q; want 302 to the provider", PathLogin, a.code, a.loc)
	}
	au, _ := url.Parse(a.loc)
	if q := au.Query(); q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" || q.Get("state") == "" {
		t.Fatalf("authorization URL %s lacks PKCE S256, a nonce or a state", a.loc)
	}
	cb, err := hs.idp.Login(c, a.loc, user.Username, user.Password)
	if err != nil {
		t.Fatal(err)
	}
	return cb
}

// signIn signs user in with c, all the way to My certificates.
func (hs *harness) signIn(t *testing.T, c *http.Client, user testidp.User) {
	t.Helper()
	a := hs.get(t, c, hs.callback(t, c, user).String())
	if a.code != http.StatusSeeOther || a.loc != PathDevices {
		t.Fatalf("callback = %d to %q: %s; want 303 to %s", a.code, a.loc, a.body, PathDevices)
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token of the page's forms.
func csrf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	return m[1]
}

// devices returns My certificates, which must answer 200.
func (hs *harness) devices(t *testing.T, c *http.Client) string {
	t.Helper()
	a := hs.get(t, c, PathDevices)
	if a.code != http.StatusOK {
		t.Fatalf("GET %s = %d: %s", PathDevices, a.code, a.body)
	}
	return a.body
}

// state counts what sign-in could have issued: records, enrollments and
// sessions.
type state struct{ records, enrollments int }

func (hs *harness) state(t *testing.T) state {
	t.Helper()
	var s state
	for _, err := range hs.c.Records() {
		if err != nil {
			t.Fatal(err)
		}
		s.records++
	}
	for _, err := range hs.c.Enrollments() {
		if err != nil {
			t.Fatal(err)
		}
		s.enrollments++
	}
	return s
}

// nothingIssued checks that nothing was issued since before.
func (hs *harness) nothingIssued(t *testing.T, before state) {
	t.Helper()
	if after := hs.state(t); after != before {
		t.Errorf("records and enrollments went from %+v to %+v; want nothing issued", before, after)
	}
}

// signedOut checks that c holds no session.
func (hs *harness) signedOut(t *testing.T, c *http.Client) {
	t.Helper()
	if a := hs.get(t, c, PathDevices); a.code != http.StatusUnauthorized {
		t.Errorf("GET %s = %d; want 401 (no session)", PathDevices, a.code)
	}
}

// enrollLink posts the add form for label and returns the enrollment
// link it sends the browser to.
func (hs *harness) addDevice(t *testing.T, c *http.Client, label string) string {
	t.Helper()
	a := hs.post(t, c, PathAdd, url.Values{"csrf": {csrf(t, hs.devices(t, c))}, "device": {label}}, "")
	if a.code != http.StatusSeeOther || !strings.HasPrefix(a.loc, "/enroll/") {
		t.Fatalf("adding %q = %d to %q: %s; want 303 to /enroll/TOKEN", label, a.code, a.loc, a.body)
	}
	return a.loc
}

// download follows an enrollment link as its page does and returns the
// certificate of the PKCS#12 it sends.
func (hs *harness) download(t *testing.T, c *http.Client, link string) *x509.Certificate {
	t.Helper()
	a := hs.downloadAnswer(t, c, link)
	if a.code != http.StatusOK {
		t.Fatalf("POST %s = %d: %s", link, a.code, a.body)
	}
	_, cert, _, err := pkcs12.DecodeChain([]byte(a.body), "correct horse battery")
	if err != nil {
		t.Fatalf("the bundle of %s: %v", link, err)
	}
	return cert
}

func (hs *harness) downloadAnswer(t *testing.T, c *http.Client, link string) answer {
	t.Helper()
	page := hs.get(t, c, link)
	if page.code != http.StatusOK {
		t.Fatalf("GET %s = %d: %s", link, page.code, page.body)
	}
	return hs.post(t, c, link, url.Values{"csrf": {csrf(t, page.body)}, "action": {"download"}, "format": {"p12"},
		"password": {"correct horse battery"}, "password2": {"correct horse battery"}}, "")
}

// record returns the record of cert.
func (hs *harness) record(t *testing.T, cert *x509.Certificate) *ca.Record {
	t.Helper()
	r, err := hs.c.Record(cert.SerialNumber)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSignInEndToEnd: a person signs in through the real provider, names
// a device, gets its bundle through the enrollment page, sees it on My
// certificates, renews it and revokes it.
func TestSignInEndToEnd(t *testing.T) {
	hs := newHarness(t, nil)
	c := hs.browser()
	start := hs.get(t, c, "/")
	if start.code != http.StatusOK || !strings.Contains(start.body, `id="signin" href="/signin/login">Sign in with Example SSO`) {
		t.Fatalf("start page = %d:\n%s", start.code, start.body)
	}
	hs.signIn(t, c, simon)
	page := hs.devices(t, c)
	for _, want := range []string{`id="cn">Simon Zeller<`, `id="email">simon@example.com<`, `id="no-devices"`, `You hold 0 valid device certificates, of at most 3`} {
		if !strings.Contains(page, want) {
			t.Errorf("My certificates lacks %q:\n%s", want, page)
		}
	}
	cert := hs.download(t, c, hs.addDevice(t, c, "Simon's laptop"))
	if cert.Subject.CommonName != "Simon Zeller" || len(cert.EmailAddresses) != 1 || cert.EmailAddresses[0] != "simon@example.com" {
		t.Errorf("certificate CN %q, emails %v; want Simon Zeller, simon@example.com", cert.Subject.CommonName, cert.EmailAddresses)
	}
	rec := hs.record(t, cert)
	if rec.Device != "Simon's laptop" || rec.Name != ca.DeviceName("simon@example.com", "Simon's laptop") {
		t.Errorf("record = %+v; want the device and its name", rec)
	}
	page = hs.devices(t, c)
	if !strings.Contains(page, `id="device-`+rec.Serial+`"><td class="label">Simon&#39;s laptop</td>`) || !strings.Contains(page, `id="renew-`+rec.Serial+`"`) {
		t.Fatalf("My certificates does not list the device with a renew button:\n%s", page)
	}
	// Renew: a new certificate for the same device; the old one superseded.
	a := hs.post(t, c, PathRenew, url.Values{"csrf": {csrf(t, page)}, "serial": {rec.Serial}}, "")
	if a.code != http.StatusSeeOther || !strings.HasPrefix(a.loc, "/enroll/") {
		t.Fatalf("renew = %d to %q: %s", a.code, a.loc, a.body)
	}
	renewed := hs.download(t, c, a.loc)
	newRec := hs.record(t, renewed)
	if old := hs.record(t, cert); old.Status != ca.StatusRevoked || old.Reason != "superseded" || newRec.RenewalOf != rec.Serial || newRec.Device != rec.Device {
		t.Errorf("after renewal: old %+v, new %+v; want the old superseded, the new renewing it", old, newRec)
	}
	page = hs.devices(t, c)
	if strings.Contains(page, rec.Serial) || !strings.Contains(page, `id="revoke-`+newRec.Serial+`"`) {
		t.Errorf("My certificates after renewal should list the new certificate only:\n%s", page)
	}
	// Revoke, lost or stolen.
	a = hs.post(t, c, PathRevoke, url.Values{"csrf": {csrf(t, page)}, "serial": {newRec.Serial}, "reason": {"keyCompromise"}}, "")
	if a.code != http.StatusOK || !strings.Contains(a.body, `id="notice"`) || !strings.Contains(a.body, "revoked (lost or stolen)") {
		t.Fatalf("revoke = %d:\n%s", a.code, a.body)
	}
	if r := hs.record(t, renewed); r.Status != ca.StatusRevoked || r.Reason != "keyCompromise" {
		t.Errorf("revoked record = %+v; want revoked for keyCompromise", r)
	}
	crl, err := hs.c.ReadPublishedCRL()
	if err != nil || !crl.CRL.IsRevoked(renewed.SerialNumber) || !crl.CRL.IsRevoked(cert.SerialNumber) {
		t.Errorf("the published CRL lacks the revoked and the superseded certificates: %v", err)
	}
	// Sign out ends the session.
	a = hs.post(t, c, PathLogout, url.Values{"csrf": {csrf(t, hs.devices(t, c))}}, "")
	if a.code != http.StatusSeeOther {
		t.Fatalf("sign out = %d: %s", a.code, a.body)
	}
	hs.signedOut(t, c)
	if !strings.Contains(hs.log.String(), "signin email=simon@example.com") {
		t.Errorf("the log lacks the sign-in:\n%s", hs.log)
	}
	var m strings.Builder
	hs.h.WriteMetrics(&m)
	for _, want := range []string{"minica_serve_signin_signed_in_total 1\n", "minica_serve_signin_device_links_total 2\n", "minica_serve_signin_revoked_total 1\n", "minica_serve_signin_refused_total 0\n"} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, m.String())
		}
	}
}

// Without TLS, and to methods or paths it does not answer, the handler
// answers with a page and the headers of every page.
func TestSignInRefusals(t *testing.T) {
	hs := newHarness(t, nil)
	tests := []struct {
		method, path string
		tls          bool
		code         int
	}{
		{http.MethodGet, "/", false, http.StatusForbidden},
		{http.MethodPost, PathLogin, true, http.StatusMethodNotAllowed},
		{http.MethodGet, PathAdd, true, http.StatusMethodNotAllowed},
		{http.MethodGet, "/signin/nothing", true, http.StatusNotFound},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(tt.method, "https://127.0.0.1"+tt.path, nil)
		if !tt.tls {
			req.TLS = nil
		}
		rec := httptest.NewRecorder()
		hs.h.ServeHTTP(rec, req)
		if rec.Code != tt.code || rec.Header().Get("Cache-Control") != "no-store" || !strings.Contains(rec.Header().Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("%s %s (TLS %v) = %d, headers %v; want %d with the pages' headers", tt.method, tt.path, tt.tls, rec.Code, rec.Header(), tt.code)
		}
	}
}

// rewriteClaims makes the provider's ID tokens carry the claims change
// makes, signed by sign.
func rewriteClaims(t *testing.T, hs *harness, sign func(map[string]any) string, change func(map[string]any)) {
	hs.idp.RewriteIDTokens(func(tok string) string {
		claims, err := testidp.DecodeClaims(tok)
		if err != nil {
			t.Errorf("decoding the provider's token: %v", err)
			return tok
		}
		change(claims)
		return sign(claims)
	})
}

// TestSignInRefusesBadTokens: an ID token that fails any check issues
// nothing and starts no session.
func TestSignInRefusesBadTokens(t *testing.T) {
	hs := newHarness(t, nil)
	now := func() float64 { return float64(time.Now().Unix()) }
	tests := []struct {
		name   string
		sign   func(map[string]any) string
		change func(map[string]any)
		code   int
		want   string
	}{
		{"forged", testidp.SignForeign, func(map[string]any) {}, http.StatusForbidden, "did not pass its checks"},
		{"expired", hs.idp.SignIDToken, func(c map[string]any) { c["iat"], c["exp"] = now()-7200, now()-3600 }, http.StatusForbidden, "did not pass its checks"},
		{"another audience", hs.idp.SignIDToken, func(c map[string]any) { c["aud"] = []string{"another-app"} }, http.StatusForbidden, "did not pass its checks"},
		{"another issuer", hs.idp.SignIDToken, func(c map[string]any) { c["iss"] = hs.idp.Issuer() + "/" }, http.StatusForbidden, "did not pass its checks"},
		{"another nonce", hs.idp.SignIDToken, func(c map[string]any) { c["nonce"] = "not-this-sign-in" }, http.StatusForbidden, "not made for this sign-in"},
		{"email_verified missing", hs.idp.SignIDToken, func(c map[string]any) { delete(c, "email_verified") }, http.StatusForbidden, "not verified"},
		{"email_verified false", hs.idp.SignIDToken, func(c map[string]any) { c["email_verified"] = false }, http.StatusForbidden, "not verified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rewriteClaims(t, hs, tt.sign, tt.change)
			defer hs.idp.RewriteIDTokens(nil)
			before := hs.state(t)
			c := hs.browser()
			a := hs.get(t, c, hs.callback(t, c, simon).String())
			if a.code != tt.code || !strings.Contains(a.body, tt.want) {
				t.Errorf("callback = %d:\n%s\nwant %d saying %q", a.code, a.body, tt.code, tt.want)
			}
			hs.signedOut(t, c)
			hs.nothingIssued(t, before)
		})
	}
	// The same provider, untouched, signs in.
	hs.signIn(t, hs.browser(), simon)
}

// TestSignInRefusesPeople: the mapping's refusals say why and whom to ask.
func TestSignInRefusesPeople(t *testing.T) {
	hs := newHarness(t, nil)
	tests := []struct {
		user testidp.User
		want string
	}{
		{unverified, "is not verified"},
		{outsider, "addresses of example.com only, and yours is of other.org"},
		{contractor, "Members of the group contractors may not get certificates here"},
	}
	for _, tt := range tests {
		t.Run(tt.user.Username, func(t *testing.T) {
			before := hs.state(t)
			c := hs.browser()
			a := hs.get(t, c, hs.callback(t, c, tt.user).String())
			if a.code != http.StatusForbidden || !strings.Contains(a.body, tt.want) || !strings.Contains(a.body, `id="contact">Whom to ask: `+"the IT desk, it@example.com") {
				t.Errorf("callback = %d:\n%s\nwant 403 saying %q and whom to ask", a.code, a.body, tt.want)
			}
			hs.signedOut(t, c)
			hs.nothingIssued(t, before)
		})
	}
}

// TestSignInReplays: a state is used once, a code once, a callback only
// in the browser that started it, and the code is useless without the
// PKCE verifier.
func TestSignInReplays(t *testing.T) {
	hs := newHarness(t, nil)
	c := hs.browser()
	cb := hs.callback(t, c, simon)
	if a := hs.get(t, c, cb.String()); a.code != http.StatusSeeOther {
		t.Fatalf("first callback = %d: %s", a.code, a.body)
	}
	before := hs.state(t)
	t.Run("replayed state", func(t *testing.T) {
		other := hs.browser()
		a := hs.get(t, other, cb.String())
		if a.code != http.StatusBadRequest || !strings.Contains(a.body, "already used") {
			t.Errorf("replayed callback = %d:\n%s", a.code, a.body)
		}
		hs.signedOut(t, other)
	})
	t.Run("replayed code", func(t *testing.T) {
		other := hs.browser()
		fresh := hs.callback(t, other, simon) // a new state of this browser
		q := fresh.Query()
		q.Set("code", cb.Query().Get("code")) // the spent code
		fresh.RawQuery = q.Encode()
		a := hs.get(t, other, fresh.String())
		if a.code != http.StatusBadRequest || !strings.Contains(a.body, "did not accept this sign-in") {
			t.Errorf("callback with a spent code = %d:\n%s", a.code, a.body)
		}
		hs.signedOut(t, other)
	})
	t.Run("another browser", func(t *testing.T) {
		victim := hs.browser()
		attacker := hs.callback(t, hs.browser(), simon) // started elsewhere
		a := hs.get(t, victim, attacker.String())
		if a.code != http.StatusBadRequest || !strings.Contains(a.body, "started in another browser") {
			t.Errorf("callback of another browser = %d:\n%s", a.code, a.body)
		}
		hs.signedOut(t, victim)
	})
	t.Run("missing PKCE verifier", func(t *testing.T) {
		// Whoever intercepts the code cannot redeem it without the
		// verifier, which never left the server: the provider refuses.
		code := hs.callback(t, hs.browser(), simon).Query().Get("code")
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {hs.h.cfg.RedirectURL},
			"client_id": {"minica"}, "client_secret": {"client-secret"}}
		resp, err := http.PostForm(tokenEndpoint(t, hs), form)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "code_verifier") || strings.Contains(string(body), "id_token") {
			t.Errorf("token request without the verifier = %d %s; want 400, code_verifier required", resp.StatusCode, body)
		}
	})
	hs.nothingIssued(t, before)
}

// tokenEndpoint reads the provider's token endpoint from its discovery.
func tokenEndpoint(t *testing.T, hs *harness) string {
	t.Helper()
	oauth, _, err := hs.h.op.get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return oauth.Endpoint.TokenURL
}

// TestSignInForms: the forms of My certificates refuse another site,
// another session's or no CSRF token, and another person's devices.
func TestSignInForms(t *testing.T) {
	hs := newHarness(t, nil)
	sc, bc := hs.browser(), hs.browser()
	hs.signIn(t, sc, simon)
	hs.signIn(t, bc, bob)
	bobCert := hs.download(t, bc, hs.addDevice(t, bc, "bob's phone"))
	bobSerial := hs.record(t, bobCert).Serial
	simonCSRF, bobCSRF := csrf(t, hs.devices(t, sc)), csrf(t, hs.devices(t, bc))
	before := hs.state(t)
	tests := []struct {
		name, path string
		form       url.Values
		origin     string
		code       int
	}{
		{"add without a token", PathAdd, url.Values{"device": {"x"}}, "", http.StatusForbidden},
		{"add with a wrong token", PathAdd, url.Values{"csrf": {"AAAA"}, "device": {"x"}}, "", http.StatusForbidden},
		{"add with another session's token", PathAdd, url.Values{"csrf": {bobCSRF}, "device": {"x"}}, "", http.StatusForbidden},
		{"add from another site", PathAdd, url.Values{"csrf": {simonCSRF}, "device": {"x"}}, "https://evil.example", http.StatusForbidden},
		{"add from an opaque origin", PathAdd, url.Values{"csrf": {simonCSRF}, "device": {"x"}}, "null", http.StatusForbidden},
		{"add with a stray field", PathAdd, url.Values{"csrf": {simonCSRF}, "device": {"x"}, "email": {"bob@example.com"}}, "", http.StatusBadRequest},
		{"revoke without a token", PathRevoke, url.Values{"serial": {bobSerial}, "reason": {"keyCompromise"}}, "", http.StatusForbidden},
		{"revoke with a wrong token", PathRevoke, url.Values{"csrf": {"AAAA"}, "serial": {bobSerial}, "reason": {"keyCompromise"}}, "", http.StatusForbidden},
		{"revoke from another site", PathRevoke, url.Values{"csrf": {simonCSRF}, "serial": {bobSerial}, "reason": {"keyCompromise"}}, "https://evil.example", http.StatusForbidden},
		{"revoke another person's device", PathRevoke, url.Values{"csrf": {simonCSRF}, "serial": {bobSerial}, "reason": {"keyCompromise"}}, "", http.StatusBadRequest},
		{"revoke for a reason not offered", PathRevoke, url.Values{"csrf": {simonCSRF}, "serial": {bobSerial}, "reason": {"cACompromise"}}, "", http.StatusBadRequest},
		{"renew another person's device", PathRenew, url.Values{"csrf": {simonCSRF}, "serial": {bobSerial}}, "", http.StatusBadRequest},
		{"an empty device name", PathAdd, url.Values{"csrf": {simonCSRF}, "device": {"  "}}, "", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := hs.post(t, sc, tt.path, tt.form, tt.origin)
			if a.code != tt.code {
				t.Errorf("POST %s = %d:\n%s\nwant %d", tt.path, a.code, a.body, tt.code)
			}
		})
	}
	hs.nothingIssued(t, before)
	if r := hs.record(t, bobCert); r.Status != ca.StatusValid {
		t.Errorf("bob's device is %s; want valid", r.Status)
	}
	if page := hs.devices(t, sc); strings.Contains(page, bobSerial) || strings.Contains(page, "bob") {
		t.Errorf("simon's My certificates shows bob's device:\n%s", page)
	}
	// A session cookie of another person is theirs: it shows only their page.
	if page := hs.devices(t, bc); !strings.Contains(page, bobSerial) {
		t.Errorf("bob's My certificates lacks his device:\n%s", page)
	}
	// Without a session, nothing.
	anon := hs.browser()
	if a := hs.post(t, anon, PathRevoke, url.Values{"csrf": {bobCSRF}, "serial": {bobSerial}, "reason": {"keyCompromise"}}, ""); a.code != http.StatusUnauthorized {
		t.Errorf("revoke without a session = %d; want 401", a.code)
	}
}

// TestSignInDeviceLimit: no more valid devices than allowed, even from
// two tabs at once.
func TestSignInDeviceLimit(t *testing.T) {
	hs := newHarness(t, func(c *Config) { c.MaxDevices = 1 })
	c := hs.browser()
	hs.signIn(t, c, simon)
	hs.download(t, c, hs.addDevice(t, c, "laptop"))
	before := hs.state(t)
	a := hs.post(t, c, PathAdd, url.Values{"csrf": {csrf(t, hs.devices(t, c))}, "device": {"phone"}}, "")
	if a.code != http.StatusConflict || !strings.Contains(a.body, "You already hold 1 valid device certificate,") {
		t.Errorf("a second device = %d:\n%s", a.code, a.body)
	}
	hs.nothingIssued(t, before)

	// Two tabs of bob ask for a link each before either is used: both get
	// one, and only one of them issues.
	bc := hs.browser()
	hs.signIn(t, bc, bob)
	links := []string{hs.addDevice(t, bc, "tab one"), hs.addDevice(t, bc, "tab two")}
	before = hs.state(t)
	answers := make([]answer, 2)
	var wg sync.WaitGroup
	for i, link := range links {
		wg.Go(func() { answers[i] = hs.downloadAnswer(t, bc, link) })
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, a := range answers {
		switch {
		case a.code == http.StatusOK:
			ok++
		case a.code == http.StatusConflict && strings.Contains(a.body, "Too many devices"):
			refused++
		default:
			t.Errorf("download = %d: %s", a.code, a.body)
		}
	}
	after := hs.state(t)
	if ok != 1 || refused != 1 || after.records != before.records+1 {
		t.Errorf("%d issued, %d refused, records %d -> %d; want 1, 1, one more", ok, refused, before.records, after.records)
	}
}

// TestSignInProviderDown: a provider that is down or slow is waited for
// a bounded time, and the page says so; serve starts without it and
// finds it once it is back.
func TestSignInProviderDown(t *testing.T) {
	hs := newHarness(t, func(c *Config) { c.ProviderTimeout = 300 * time.Millisecond })
	hs.idp.SetDown(true)
	before := hs.state(t)
	c := hs.browser()
	a := hs.get(t, c, PathLogin)
	if a.code != http.StatusServiceUnavailable || !strings.Contains(a.body, "The identity provider cannot be reached") {
		t.Fatalf("login with the provider down = %d:\n%s", a.code, a.body)
	}
	// Within retryEvery the failure is answered without another try.
	hs.idp.SetDown(false)
	if a := hs.get(t, c, PathLogin); a.code != http.StatusServiceUnavailable {
		t.Errorf("login right after = %d; want 503 until the retry", a.code)
	}
	hs.clock.Advance(retryEvery)
	hs.signIn(t, c, simon)

	// Slow at the token endpoint: the callback gives up after the timeout.
	other := hs.browser()
	cb := hs.callback(t, other, simon)
	hs.idp.SetDelay(5 * time.Second)
	a = hs.get(t, other, cb.String())
	hs.idp.SetDelay(0)
	if a.code != http.StatusServiceUnavailable || !strings.Contains(a.body, "did not answer in time") {
		t.Errorf("callback with a slow provider = %d:\n%s", a.code, a.body)
	}
	hs.signedOut(t, other)
	hs.nothingIssued(t, before)
	if !strings.Contains(hs.log.String(), "signin-provider-down") {
		t.Errorf("the log does not say the provider was down:\n%s", hs.log)
	}
}

// TestSignInRotatedKeys: tokens signed with a key the provider rotated in
// after discovery are checked against its new keys.
func TestSignInRotatedKeys(t *testing.T) {
	hs := newHarness(t, nil)
	hs.signIn(t, hs.browser(), simon)
	hs.idp.RotateKeys()
	hs.idp.RotateKeys()
	hs.signIn(t, hs.browser(), simon)
}

func TestNewRefusesBadConfig(t *testing.T) {
	hs := newHarness(t, nil)
	good := hs.h.cfg
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string
	}{
		{"http issuer elsewhere", func(c *Config) { c.Issuer = "http://idp.example.com" }, `invalid issuer "http://idp.example.com"`},
		{"redirect elsewhere than the callback", func(c *Config) { c.RedirectURL = "https://pki.example.com/cb" }, "want https://HOST[:PORT]/signin/callback"},
		{"no secret", func(c *Config) { c.ClientSecret = "" }, "client ID and secret"},
		{"no domain", func(c *Config) { c.Mapping = Mapping{} }, "no allowed email domain"},
	}
	for _, tt := range tests {
		cfg := good
		tt.mod(&cfg)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: New() error = %v; want %q", tt.name, err, tt.wantErr)
		}
	}
	if _, err := New(good); err != nil {
		t.Errorf("New(good) = %v", err)
	}
}
