package enroll

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smallstep/pkcs7"
	"howett.net/plist"

	"minica/ca"
	"minica/formats"
	"minica/serve/internal/servetest"
)

// enrollFixture is a CA (servetest.Fixture) with an Enroller on a CA
// handle of its own, answering plain HTTP (AllowHTTP) unless the test says
// otherwise.
type enrollFixture struct {
	*servetest.Fixture
	h *Enroller
}

var start = servetest.Start

func newEnrollFixture(t *testing.T, mod func(*Config)) *enrollFixture {
	t.Helper()
	ef := &enrollFixture{Fixture: servetest.NewFixture(t)}
	ec := Config{CA: ef.Other(t), Signer: ef.Signer, Now: ef.Clock.Now, Log: ef.Log, AllowHTTP: true,
		LockTimeout: 5 * time.Second, P12Iterations: 1, Rate: 1000, Burst: 1000, TotalRate: 10000, TotalBurst: 10000}
	if mod != nil {
		mod(&ec)
	}
	var err error
	if ef.h, err = New(ec); err != nil {
		t.Fatal(err)
	}
	return ef
}

// metrics returns the Enroller's metrics, as serve's /metrics appends them.
func (f *enrollFixture) metrics(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	f.h.WriteMetrics(&b)
	return b.String()
}

// create makes a pending enrollment for name and returns its token.
func (f *enrollFixture) create(t *testing.T, name string, id ca.EnrollIdentity, life time.Duration) string {
	t.Helper()
	c := f.Other(t)
	unlock, err := c.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	got, err := c.CreateEnrollment(name, id, life)
	if err != nil {
		t.Fatal(err)
	}
	return got.Token
}

// enrollReq is one request to /enroll/TOKEN.
type enrollReq struct {
	method, token string
	form          url.Values
	body          string // raw body, instead of form
	from          string // RemoteAddr, default 192.0.2.10:40000
	header        []string
}

func (f *enrollFixture) send(t *testing.T, r enrollReq) *httptest.ResponseRecorder {
	t.Helper()
	var body *strings.Reader
	switch {
	case r.body != "":
		body = strings.NewReader(r.body)
	case r.form != nil:
		body = strings.NewReader(r.form.Encode())
	default:
		body = strings.NewReader("")
	}
	if r.method == "" {
		r.method = http.MethodGet
		if r.form != nil || r.body != "" {
			r.method = http.MethodPost
		}
	}
	req := httptest.NewRequest(r.method, "/enroll/"+r.token, body)
	req.RemoteAddr = cmpOr(r.from, "192.0.2.10:40000")
	if r.method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(r.header); i += 2 {
		req.Header.Set(r.header[i], r.header[i+1])
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf loads the page of token and returns the form's CSRF token.
func (f *enrollFixture) csrf(t *testing.T, token string) string {
	t.Helper()
	rec := f.send(t, enrollReq{token: token})
	m := csrfField.FindStringSubmatch(rec.Body.String())
	if rec.Code != http.StatusOK || m == nil {
		t.Fatalf("GET /enroll/TOKEN = %d, no CSRF field:\n%s", rec.Code, rec.Body)
	}
	return m[1]
}

func download(csrf, password, format string) url.Values {
	return url.Values{"csrf": {csrf}, "action": {"download"}, "password": {password}, "password2": {password}, "format": {format}}
}

func (f *enrollFixture) clientRecords(t *testing.T, name string) []*ca.Record {
	t.Helper()
	recs, err := f.Other(t).RecordsByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

const testPassword = "correct horse battery"

func TestEnrollDownloadsEachFormat(t *testing.T) {
	f := newEnrollFixture(t, nil)
	for _, format := range []string{"p12", "p12-compat", "mobileconfig"} {
		t.Run(format, func(t *testing.T) {
			name := "user-" + format
			token := f.create(t, name, ca.EnrollIdentity{Emails: []string{name + "@example.com"}}, time.Hour)
			rec := f.send(t, enrollReq{token: token, form: download(f.csrf(t, token), testPassword, format)})
			if rec.Code != http.StatusOK {
				t.Fatalf("download = %d:\n%s", rec.Code, rec.Body)
			}
			wantType, wantName := "application/x-pkcs12", name+".p12"
			switch format {
			case "p12-compat":
				wantName = name + "-compat.p12"
			case "mobileconfig":
				wantType, wantName = "application/x-apple-aspen-config", name+".mobileconfig"
			}
			if got := rec.Header().Get("Content-Type"); got != wantType {
				t.Errorf("Content-Type = %q; want %q", got, wantType)
			}
			if got := rec.Header().Get("Content-Disposition"); got != `attachment; filename="`+wantName+`"` {
				t.Errorf("Content-Disposition = %q; want the file %s", got, wantName)
			}
			p12 := rec.Body.Bytes()
			if format == "mobileconfig" {
				p12 = checkMobileconfig(t, p12, f.CA.Cert)
			}
			_, leaf, _, err := formats.DecodeP12(p12, testPassword)
			if err != nil {
				t.Fatalf("the bundle does not open with the password: %v", err)
			}
			info, _ := formats.P12EncryptionInfo(p12)
			if wantCompat := format != "p12"; info == nil || strings.Contains(info.String(), "AES") == wantCompat {
				t.Errorf("bundle %s encryption %v; want compat %v", format, info, wantCompat)
			}
			recs := f.clientRecords(t, name)
			if len(recs) != 1 || recs[0].Serial != ca.SerialHex(leaf.SerialNumber) || recs[0].HasKey {
				t.Errorf("records of %s = %+v; want one, for the bundle's certificate, without a stored key", name, recs)
			}
			if leaf.EmailAddresses[0] != name+"@example.com" {
				t.Errorf("certificate emails %v", leaf.EmailAddresses)
			}
		})
	}
}

// checkMobileconfig parses an Apple profile, checks its payloads, and
// returns the PKCS#12 inside.
func checkMobileconfig(t *testing.T, data []byte, caCert *x509.Certificate) []byte {
	t.Helper()
	var profile struct {
		PayloadType    string
		PayloadVersion int
		PayloadUUID    string
		PayloadContent []struct {
			PayloadType    string
			PayloadUUID    string
			PayloadContent []byte
		}
	}
	if _, err := plist.Unmarshal(data, &profile); err != nil {
		t.Fatalf("the profile is not a plist: %v\n%s", err, data)
	}
	if profile.PayloadType != "Configuration" || profile.PayloadVersion != 1 || len(profile.PayloadContent) != 2 {
		t.Fatalf("profile = %+v; want a Configuration of two payloads", profile)
	}
	var p12 []byte
	uuids := []string{profile.PayloadUUID}
	for _, p := range profile.PayloadContent {
		uuids = append(uuids, p.PayloadUUID)
		switch p.PayloadType {
		case "com.apple.security.pkcs12":
			p12 = p.PayloadContent
		case "com.apple.security.root":
			if !bytes.Equal(p.PayloadContent, caCert.Raw) {
				t.Error("the root payload is not the CA certificate")
			}
		default:
			t.Errorf("unexpected payload type %q", p.PayloadType)
		}
	}
	slices.Sort(uuids)
	if len(slices.Compact(uuids)) != 3 || !regexp.MustCompile(`^[0-9A-F-]{36}$`).MatchString(uuids[0]) {
		t.Errorf("payload UUIDs %v; want three distinct UUIDs", uuids)
	}
	if p12 == nil {
		t.Fatal("no com.apple.security.pkcs12 payload")
	}
	return p12
}

// signedProfile makes a CA in real time (CMS signing times are the real
// clock's), with a server certificate that signs profiles, and downloads
// the Apple profile of one enrollment. It returns the CA and the profile.
func signedProfile(t *testing.T) (*ca.CA, []byte) {
	t.Helper()
	c, err := ca.Init(filepath.Join(t.TempDir(), "ca"), ca.InitOptions{CommonName: "Test Root", FirstCRL: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	signer, err := c.LoadSigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Issue(signer, ca.Request{Name: "pki.example.com", Profile: ca.Server}); err != nil {
		t.Fatal(err)
	}
	signing, err := c.ServerTLSCertificate("pki.example.com", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	created, err := c.CreateEnrollment("simon", ca.EnrollIdentity{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{CA: c, Signer: signer, AllowHTTP: true,
		SigningCert: func() (*tls.Certificate, error) { return &signing, nil }})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := c.LookupEnrollment(created.Token)
	req := httptest.NewRequest(http.MethodPost, "/enroll/"+created.Token, strings.NewReader(download(csrfToken(e), testPassword, "mobileconfig").Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("download = %d:\n%s", rec.Code, rec.Body)
	}
	return c, rec.Body.Bytes()
}

func TestEnrollSignsMobileconfig(t *testing.T) {
	c, profile := signedProfile(t)
	p7, err := pkcs7.Parse(profile)
	if err != nil {
		t.Fatalf("the signed profile is not CMS: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(c.Cert)
	if err := p7.VerifyWithChain(roots); err != nil {
		t.Errorf("the profile's signature does not verify to the CA: %v", err)
	}
	if s := p7.GetOnlySigner(); s == nil || s.Subject.CommonName != "pki.example.com" {
		t.Errorf("signer = %v; want the server certificate pki.example.com", s)
	}
	checkMobileconfig(t, p7.Content, c.Cert)
}

func TestEnrollSecurityHeadersOnEveryResponse(t *testing.T) {
	f := newEnrollFixture(t, func(ec *Config) { ec.Rate, ec.Burst = 60, 12 })
	token := f.create(t, "simon", ca.EnrollIdentity{}, time.Hour)
	csrf := f.csrf(t, token)
	tests := []struct {
		name string
		r    enrollReq
		code int
	}{
		{"page", enrollReq{token: token}, 200},
		{"head", enrollReq{method: http.MethodHead, token: token}, 200},
		{"unknown", enrollReq{token: strings.Repeat("A", 43)}, 404},
		{"malformed", enrollReq{token: "x"}, 404},
		{"bad method", enrollReq{method: http.MethodPut, token: token}, 405},
		{"generate", enrollReq{token: token, form: url.Values{"csrf": {csrf}, "action": {"generate"}, "format": {"p12"}}}, 200},
		{"short password", enrollReq{token: token, form: download(csrf, "short", "p12")}, 400},
		{"too large", enrollReq{token: token, body: "csrf=" + strings.Repeat("a", MaxFormBytes)}, 413},
		{"download", enrollReq{token: token, form: download(csrf, testPassword, "p12")}, 200},
		{"used", enrollReq{token: token}, 404},
		{"rate limited", enrollReq{token: token}, 429},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.r
			if tt.name == "rate limited" {
				for range 20 {
					f.send(t, r)
				}
			}
			rec := f.send(t, r)
			if rec.Code != tt.code {
				t.Fatalf("status = %d; want %d\n%s", rec.Code, tt.code, rec.Body)
			}
			for k, want := range map[string]string{
				"Cache-Control": "no-store", "Referrer-Policy": "same-origin", "X-Frame-Options": "DENY",
				"X-Content-Type-Options": "nosniff", "Content-Security-Policy": pageCSP,
			} {
				if got := rec.Header().Get(k); got != want {
					t.Errorf("%s = %q; want %q", k, got, want)
				}
			}
		})
	}
}

func TestEnrollPageIsSelfContained(t *testing.T) {
	f := newEnrollFixture(t, nil)
	token := f.create(t, "simon", ca.EnrollIdentity{Emails: []string{"simon@example.com"}}, time.Hour)
	for _, r := range []enrollReq{
		{token: token},
		{token: token, form: url.Values{"csrf": {f.csrf(t, token)}, "action": {"generate"}, "format": {"p12"}}},
		{token: strings.Repeat("A", 43)},
	} {
		body := f.send(t, r).Body.String()
		if regexp.MustCompile(`(?i)<script|\ssrc=|<link|href=|url\(|@import|\son[a-z]+=`).MatchString(body) {
			t.Errorf("the page loads or runs something:\n%s", body)
		}
		m := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no style element:\n%s", body)
		}
		sum := sha256.Sum256([]byte(m[1]))
		if want := "style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(pageCSP, want) {
			t.Errorf("the CSP %q does not allow the page's style (%s)", pageCSP, want)
		}
	}
	for _, want := range []string{"default-src 'none'", "form-action 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(pageCSP, want) {
			t.Errorf("CSP %q lacks %q", pageCSP, want)
		}
	}
	page := f.send(t, enrollReq{token: token}).Body.String()
	for _, want := range []string{"simon@example.com", "Test Root", `name="password2"`, `value="generate"`, "Anyone who has the file and its password"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

func TestEnrollRefusedLinksLookAlike(t *testing.T) {
	f := newEnrollFixture(t, nil)
	expired := f.create(t, "expired", ca.EnrollIdentity{}, time.Minute)
	cancelled := f.create(t, "cancelled", ca.EnrollIdentity{}, time.Hour)
	used := f.create(t, "used", ca.EnrollIdentity{}, time.Hour)
	if rec := f.send(t, enrollReq{token: used, form: download(f.csrf(t, used), testPassword, "p12")}); rec.Code != 200 {
		t.Fatalf("download = %d", rec.Code)
	}
	if _, err := f.Other(t).CancelEnrollment(ca.KindLink, "cancelled"); err != nil {
		t.Fatal(err)
	}
	f.Clock.Set(start.Add(2 * time.Minute))
	tests := []struct{ name, token, want string }{
		{"unknown", strings.Repeat("A", 43), "not valid"},
		{"malformed", "abc", "not valid"},
		{"expired", expired, "expired on"},
		{"cancelled", cancelled, "was cancelled"},
		{"used", used, "already used on 2 January 2030 at 03:04 UTC from the address 192.0.2.10"},
	}
	var headers []string
	for _, tt := range tests {
		rec := f.send(t, enrollReq{token: tt.token})
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), tt.want) {
			t.Errorf("%s: status %d; want 404 saying %q:\n%s", tt.name, rec.Code, tt.want, rec.Body)
		}
		var keys []string
		for k := range rec.Header() {
			if k != "Content-Length" {
				keys = append(keys, k+"="+rec.Header().Get(k))
			}
		}
		slices.Sort(keys)
		headers = append(headers, strings.Join(keys, "\n"))
	}
	for i, h := range headers {
		if h != headers[0] {
			t.Errorf("headers of %s differ from those of an unknown token:\n%s\nvs\n%s", tests[i].name, h, headers[0])
		}
	}
}

func TestEnrollRateLimits(t *testing.T) {
	t.Run("per address", func(t *testing.T) {
		f := newEnrollFixture(t, func(ec *Config) { ec.Rate, ec.Burst = 6, 3 })
		token := f.create(t, "simon", ca.EnrollIdentity{}, time.Hour)
		for i := range 3 {
			if rec := f.send(t, enrollReq{token: token}); rec.Code != 200 {
				t.Fatalf("request %d = %d; want 200 within the burst", i, rec.Code)
			}
		}
		rec := f.send(t, enrollReq{token: token})
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("4th request = %d, Retry-After %q; want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
		}
		if rec := f.send(t, enrollReq{token: token, from: "198.51.100.9:1"}); rec.Code != 200 {
			t.Errorf("another address = %d; want 200", rec.Code)
		}
		f.Clock.Set(start.Add(10 * time.Second)) // one token back at 6 a minute
		if rec := f.send(t, enrollReq{token: token}); rec.Code != 200 {
			t.Errorf("after 10s = %d; want 200", rec.Code)
		}
		if !strings.Contains(f.metrics(t), "minica_serve_enroll_rate_limited_total 1\n") {
			t.Errorf("metrics lack the rate-limited request:\n%s", f.metrics(t))
		}
	})
	t.Run("overall", func(t *testing.T) {
		f := newEnrollFixture(t, func(ec *Config) { ec.TotalRate, ec.TotalBurst = 60, 5 })
		token := f.create(t, "simon", ca.EnrollIdentity{}, time.Hour)
		codes := map[int]int{}
		for i := range 8 {
			codes[f.send(t, enrollReq{token: token, from: "203.0.113." + string(rune('1'+i)) + ":1"}).Code]++
		}
		if codes[200] != 5 || codes[429] != 3 {
			t.Errorf("8 requests from 8 addresses got %v; want 5 answered and 3 refused", codes)
		}
	})
	t.Run("ipv6 counts by /64", func(t *testing.T) {
		f := newEnrollFixture(t, func(ec *Config) { ec.Rate, ec.Burst = 6, 2 })
		token := f.create(t, "simon", ca.EnrollIdentity{}, time.Hour)
		f.send(t, enrollReq{token: token, from: "[2001:db8::1]:1"})
		f.send(t, enrollReq{token: token, from: "[2001:db8::2]:1"})
		if rec := f.send(t, enrollReq{token: token, from: "[2001:db8::3]:1"}); rec.Code != 429 {
			t.Errorf("third address of one /64 = %d; want 429", rec.Code)
		}
		if rec := f.send(t, enrollReq{token: token, from: "[2001:db8:0:1::3]:1"}); rec.Code != 200 {
			t.Errorf("an address of another /64 = %d; want 200", rec.Code)
		}
	})
}

func TestEnrollCSRF(t *testing.T) {
	f := newEnrollFixture(t, nil)
	token := f.create(t, "simon", ca.EnrollIdentity{}, time.Hour)
	other := f.create(t, "bob", ca.EnrollIdentity{}, time.Hour)
	good := f.csrf(t, token)
	tests := []struct {
		name   string
		form   url.Values
		header []string
		code   int
	}{
		{name: "missing", form: download("", testPassword, "p12"), code: 403},
		{name: "wrong", form: download(strings.Repeat("x", 43), testPassword, "p12"), code: 403},
		{name: "another enrollment's", form: download(f.csrf(t, other), testPassword, "p12"), code: 403},
		{name: "cross-site origin", form: download(good, testPassword, "p12"), header: []string{"Origin", "https://evil.example"}, code: 403},
		{name: "cross-site fetch", form: download(good, testPassword, "p12"), header: []string{"Sec-Fetch-Site", "cross-site"}, code: 403},
		// An opaque origin (a sandboxed frame, a data: URL) is no origin
		// of this page, nor is the page's host under another scheme.
		{name: "null origin", form: download(good, testPassword, "p12"), header: []string{"Origin", "null"}, code: 403},
		{name: "origin of another scheme", form: download(good, testPassword, "p12"), header: []string{"Origin", "https://example.com"}, code: 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if rec := f.send(t, enrollReq{token: token, form: tt.form, header: tt.header}); rec.Code != tt.code {
				t.Errorf("status = %d; want %d\n%s", rec.Code, tt.code, rec.Body)
			}
		})
	}
	if recs := f.clientRecords(t, "simon"); len(recs) != 0 {
		t.Fatalf("a refused form issued %d certificates", len(recs))
	}
	// The link is still usable with the right form, from the same origin.
	rec := f.send(t, enrollReq{token: token, form: download(good, testPassword, "p12"), header: []string{"Origin", "http://example.com", "Sec-Fetch-Site", "same-origin"}})
	if rec.Code != 200 {
		t.Errorf("the right form after the refused ones = %d; want 200\n%s", rec.Code, rec.Body)
	}
}

func TestEnrollFormForAnotherName(t *testing.T) {
	f := newEnrollFixture(t, nil)
	token := f.create(t, "simon", ca.EnrollIdentity{}, time.Hour)
	f.create(t, "bob", ca.EnrollIdentity{}, time.Hour)
	csrf := f.csrf(t, token)
	for _, field := range []string{"name", "cn", "email"} {
		form := download(csrf, testPassword, "p12")
		form.Set(field, "bob")
		if rec := f.send(t, enrollReq{token: token, form: form}); rec.Code != http.StatusBadRequest {
			t.Errorf("form with %s=bob = %d; want 400", field, rec.Code)
		}
	}
	if rec := f.send(t, enrollReq{method: http.MethodPost, token: token + "?name=bob", form: download(csrf, testPassword, "p12")}); rec.Code != 400 {
		t.Errorf("token with a query = %d; want 400", rec.Code)
	}
	if n := len(f.clientRecords(t, "bob")) + len(f.clientRecords(t, "simon")); n != 0 {
		t.Errorf("%d certificates issued; want none", n)
	}
	rec := f.send(t, enrollReq{token: token, form: download(csrf, testPassword, "p12")})
	_, leaf, _, err := formats.DecodeP12(rec.Body.Bytes(), testPassword)
	if err != nil || leaf.Subject.CommonName != "simon" {
		t.Errorf("download = %d, %v; want simon's certificate", rec.Code, err)
	}
}

func TestEnrollPasswordRules(t *testing.T) {
	f := newEnrollFixture(t, nil)
	token := f.create(t, "simon", ca.EnrollIdentity{}, time.Hour)
	csrf := f.csrf(t, token)
	mismatch := download(csrf, testPassword, "p12")
	mismatch.Set("password2", testPassword+"x")
	tests := []struct {
		name string
		form url.Values
		want string
	}{
		{"mismatch", mismatch, "The two passwords differ"},
		{"short", download(csrf, "123456789", "p12"), "at least 10 characters"},
		{"non-ASCII", download(csrf, "pässwort-lang", "p12"), "printable ASCII"},
		{"no format", download(csrf, testPassword, "zip"), "Choose one of the file types"},
	}
	for _, tt := range tests {
		rec := f.send(t, enrollReq{token: token, form: tt.form})
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), tt.want) {
			t.Errorf("%s: %d; want 400 saying %q", tt.name, rec.Code, tt.want)
		}
	}
	// A generated password: shown, the link still pending, then used.
	rec := f.send(t, enrollReq{token: token, form: url.Values{"csrf": {csrf}, "action": {"generate"}, "format": {"p12-compat"}}})
	m := regexp.MustCompile(`id="generated">([A-Za-z0-9]{24})<`).FindStringSubmatch(rec.Body.String())
	if rec.Code != 200 || m == nil {
		t.Fatalf("generate = %d, no password shown:\n%s", rec.Code, rec.Body)
	}
	if !strings.Contains(rec.Body.String(), `name="format" value="p12-compat"`) {
		t.Error("the generated-password form lost the chosen format")
	}
	if len(f.clientRecords(t, "simon")) != 0 {
		t.Fatal("generating a password issued a certificate")
	}
	rec = f.send(t, enrollReq{token: token, form: download(csrf, m[1], "p12-compat")})
	if _, _, _, err := formats.DecodeP12(rec.Body.Bytes(), m[1]); rec.Code != 200 || err != nil {
		t.Errorf("download with the generated password = %d, %v", rec.Code, err)
	}
}

func TestEnrollHTTPSOnly(t *testing.T) {
	f := newEnrollFixture(t, func(ec *Config) { ec.AllowHTTP = false })
	token := f.create(t, "simon", ca.EnrollIdentity{}, time.Hour)
	if rec := f.send(t, enrollReq{token: token}); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "HTTPS only") {
		t.Errorf("plain HTTP = %d; want 403 HTTPS only", rec.Code)
	}
	req := httptest.NewRequest(http.MethodGet, "https://pki.example.com/enroll/"+token, nil)
	req.RequestURI = "/enroll/" + token
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("HTTPS = %d; want 200", rec.Code)
	}
}

func TestEnrollNeverLogsSecrets(t *testing.T) {
	f := newEnrollFixture(t, func(ec *Config) { ec.Rate, ec.Burst = 60, 6 })
	token := f.create(t, "simon", ca.EnrollIdentity{}, time.Hour)
	csrf := f.csrf(t, token)
	gen := f.send(t, enrollReq{token: token, form: url.Values{"csrf": {csrf}, "action": {"generate"}, "format": {"p12"}}})
	generated := regexp.MustCompile(`id="generated">([A-Za-z0-9]+)<`).FindStringSubmatch(gen.Body.String())[1]
	f.send(t, enrollReq{token: token, form: download(csrf, "short", "p12")})
	f.send(t, enrollReq{token: token, form: download(csrf, testPassword, "p12")})
	f.send(t, enrollReq{token: token})
	f.send(t, enrollReq{token: token[:40] + "xyz"})
	for range 8 {
		f.send(t, enrollReq{token: token})
	}
	log := f.Log.String()
	for what, secret := range map[string]string{"token": token, "token prefix": token[:16], "csrf": csrf, "password": testPassword, "generated password": generated} {
		if strings.Contains(log, secret) {
			t.Errorf("the log holds the %s:\n%s", what, log)
		}
	}
	id := ca.EnrollmentID(token)
	for _, event := range []string{"enroll-page", "enroll-password-generated", "enroll-issued", "enroll-refused", "enroll-rate-limited"} {
		if !regexp.MustCompile(event + ` id=` + id + ` `).MatchString(log) {
			t.Errorf("the log has no %s line naming the link by its hash prefix %s:\n%s", event, id, log)
		}
	}
}

func TestEnrollConcurrentUseIssuesOnce(t *testing.T) {
	f := newEnrollFixture(t, nil)
	token := f.create(t, "simon", ca.EnrollIdentity{}, time.Hour)
	form := download(f.csrf(t, token), testPassword, "p12")
	const n = 24
	codes := make([]int, n)
	var wg sync.WaitGroup
	startGate := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-startGate
			codes[i] = f.send(t, enrollReq{token: token, form: form, from: "192.0.2." + string(rune('0'+i%10)) + ":1"}).Code
		})
	}
	close(startGate)
	wg.Wait()
	counts := map[int]int{}
	for _, c := range codes {
		counts[c]++
	}
	if counts[200] != 1 || counts[404] != n-1 {
		t.Errorf("%d simultaneous downloads got %v; want one 200 and %d 404", n, counts, n-1)
	}
	if recs := f.clientRecords(t, "simon"); len(recs) != 1 {
		t.Errorf("%d certificates issued for simon; want exactly 1", len(recs))
	}
}

func TestDetectPlatform(t *testing.T) {
	tests := []struct{ ua, platform, first string }{
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15", "iPhone and iPad", "mobileconfig"},
		{"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/126.0 Mobile", "Android", "p12-compat"},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/126.0", "Windows", "p12"},
		{"Mozilla/5.0 (Windows NT 6.1; Win64; x64) Gecko/20100101 Firefox/115.0", "Windows", "p12-compat"},
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 Safari/605.1.15", "macOS", "p12-compat"},
		{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 HeadlessChrome/126.0", "Linux and ChromeOS", "p12"},
		{"curl/8.5.0", "Linux and ChromeOS", "p12"},
	}
	f := newEnrollFixture(t, nil)
	token := f.create(t, "simon", ca.EnrollIdentity{}, time.Hour)
	for _, tt := range tests {
		p := detectPlatform(tt.ua)
		if p.Name != tt.platform || p.first.String() != tt.first {
			t.Errorf("detectPlatform(%q) = %s, %s; want %s, %s", tt.ua, p.Name, p.first, tt.platform, tt.first)
		}
		// The page offers the platform's file first and checked, and the
		// others after it.
		body := f.send(t, enrollReq{token: token, header: []string{"User-Agent", tt.ua}}).Body.String()
		offered := regexp.MustCompile(`name="format" value="([a-z0-9-]+)"( checked)?`).FindAllStringSubmatch(body, -1)
		if len(offered) != 3 || offered[0][1] != tt.first || offered[0][2] == "" {
			t.Errorf("%s: formats offered %v; want %s first and checked, three in all", tt.platform, offered, tt.first)
		}
		if !strings.Contains(body, "Installing on "+p.Name) {
			t.Errorf("%s: the page lacks its install steps", tt.platform)
		}
	}
}

// Two serve processes on one CA directory (two Enrollers, each on its own
// CA handle, so that only the CA's file lock orders them) racing on one
// token issue exactly one certificate.
func TestEnrollConcurrentUseAcrossHandles(t *testing.T) {
	f := newEnrollFixture(t, nil)
	second, err := New(Config{CA: f.Other(t), Signer: f.Signer, Now: f.Clock.Now, AllowHTTP: true,
		LockTimeout: 10 * time.Second, P12Iterations: 1, Rate: 1000, Burst: 1000, TotalRate: 10000, TotalBurst: 10000})
	if err != nil {
		t.Fatal(err)
	}
	f.h.cfg.LockTimeout = 10 * time.Second
	token := f.create(t, "simon", ca.EnrollIdentity{}, time.Hour)
	form := download(f.csrf(t, token), testPassword, "p12").Encode()
	const n = 16
	codes := make([]int, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range n {
		h := http.Handler(f.h)
		if i%2 == 1 {
			h = second
		}
		wg.Go(func() {
			req := httptest.NewRequest(http.MethodPost, "/enroll/"+token, strings.NewReader(form))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := httptest.NewRecorder()
			<-gate
			h.ServeHTTP(rec, req)
			codes[i] = rec.Code
		})
	}
	close(gate)
	wg.Wait()
	counts := map[int]int{}
	for _, code := range codes {
		counts[code]++
	}
	if counts[200] != 1 || counts[404] != n-1 {
		t.Errorf("%d simultaneous downloads through two handles got %v; want one 200 and %d 404", n, counts, n-1)
	}
	if recs := f.clientRecords(t, "simon"); len(recs) != 1 {
		t.Errorf("%d certificates issued for simon; want exactly 1", len(recs))
	}
}
