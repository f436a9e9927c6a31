package proxy

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"html/template"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/identity"
	"minica/internal/testca"
	"minica/revoke"
)

const testHelpURL = "https://pki.example.com/renew"

// pageEnv is a proxy in RefusalPage mode whose upstream fails the test
// when a request of any client but one with CN "good" reaches it.
func pageEnv(t *testing.T, mod func(*Config)) *env {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cn := r.Header.Get("X-SSL-Client-CN"); cn != "good" {
			t.Errorf("the upstream got %s %s from a refused client (CN %q)", r.Method, r.URL, cn)
		}
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "hello from upstream")
	}))
	t.Cleanup(up.Close)
	return newEnv(t, func(c *Config) {
		c.Upstream = up.URL
		c.Refusal = RefusalPage
		c.HelpURL = testHelpURL
		if mod != nil {
			mod(c)
		}
	})
}

// presentingClient returns an HTTP client that presents cert (none if nil)
// whatever CAs the proxy names, as a browser told to would.
func (e *env) presentingClient(cert *x509.Certificate, key crypto.Signer, h2 bool) *http.Client {
	cfg := e.tlsConfig(nil, nil)
	if cert != nil {
		c := &tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return c, nil }
	}
	tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// revokedCRL is a CRL of e's CA, with the next number, listing serial as
// revoked at `at` for keyCompromise.
func (e *env) revokedCRL(serial *big.Int, at time.Time) []byte {
	e.t.Helper()
	e.crlNum++
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number: big.NewInt(e.crlNum), ThisUpdate: e.now().Add(-time.Minute), NextUpdate: e.now().Add(time.Hour),
		RevokedCertificateEntries: []x509.RevocationListEntry{{SerialNumber: serial, RevocationTime: at, ReasonCode: int(revoke.KeyCompromise)}},
	}, e.ca.Cert, e.ca.Key)
	if err != nil {
		e.t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der})
}

type refusalCase struct {
	cert   *x509.Certificate
	key    crypto.Signer
	before func(e *env) // after the certificate is made, before the request
	status int
	reason string
	want   []string // in the page, HTML and text alike
	noHelp bool
}

// refusalCases are the refusals of each reason, made in an env of
// pageEnv: the certificate and what happens before the request.
var refusalCases = []struct {
	name string
	mk   func(t *testing.T, e *env) refusalCase
}{
	{"no certificate", func(t *testing.T, e *env) refusalCase {
		return refusalCase{status: 496, reason: ReasonNoCertificate,
			want: []string{"No client certificate", "presented none", "ask for one"}}
	}},
	{"expired", func(t *testing.T, e *env) refusalCase {
		cert, key := e.ca.Leaf(t, clientTemplate("ella", e.now().Add(-48*time.Hour), e.now().Add(-25*time.Hour)))
		return refusalCase{cert: cert, key: key, status: 495, reason: ReasonExpired,
			want: []string{"Your certificate has expired", "expired on " + pageTime(cert.NotAfter), "Renew your certificate", "ella"}}
	}},
	{"not yet valid", func(t *testing.T, e *env) refusalCase {
		cert, key := e.ca.Leaf(t, clientTemplate("nora", e.now().Add(2*time.Hour), e.now().Add(48*time.Hour)))
		return refusalCase{cert: cert, key: key, status: 495, reason: ReasonNotYetValid,
			want: []string{"not valid yet", "valid from " + pageTime(cert.NotBefore), "nora"}}
	}},
	{"revoked", func(t *testing.T, e *env) refusalCase {
		cert, key := e.ca.Client(t, "rita")
		return refusalCase{cert: cert, key: key, status: 495, reason: ReasonRevoked,
			before: func(e *env) { e.setCRL(e.revokedCRL(cert.SerialNumber, revokedAt)); e.reload(t) },
			want:   []string{"has been revoked", "revoked on 2026-11-30 08:15:00 UTC (reason: keyCompromise)", "Get a new certificate", "rita", identity.SerialHex(cert.SerialNumber)}}
	}},
	{"unknown CA", func(t *testing.T, e *env) refusalCase {
		cert, key := testca.New(t, "Stranger CA").Client(t, "uma")
		return refusalCase{cert: cert, key: key, status: 495, reason: ReasonUnknownCA,
			want: []string{"unknown authority", "issued by “Stranger CA”", "accepts certificates of: “Test CA”", "uma"}}
	}},
	{"server certificate", func(t *testing.T, e *env) refusalCase {
		cert, key := e.ca.Server(t, "web.example.com")
		return refusalCase{cert: cert, key: key, status: 495, reason: ReasonWrongEKU,
			want: []string{"Not a client certificate", "clientAuth", "web.example.com"}}
	}},
	{"no EKU", func(t *testing.T, e *env) refusalCase {
		tmpl := clientTemplate("noeku", time.Time{}, time.Time{})
		tmpl.ExtKeyUsage = nil
		cert, key := e.ca.Leaf(t, tmpl)
		return refusalCase{cert: cert, key: key, status: 495, reason: ReasonNoEKU,
			want: []string{"Not a client certificate", "no extended key usage"}}
	}},
	{"CA certificate", func(t *testing.T, e *env) refusalCase {
		return refusalCase{cert: e.ca.Cert, key: e.ca.Key, status: 495, reason: ReasonCACertificate,
			want: []string{"Not a client certificate", "certificate authority's"}}
	}},
	{"CRL expired", func(t *testing.T, e *env) refusalCase {
		cert, key := e.ca.Client(t, "carl")
		return refusalCase{cert: cert, key: key, status: 503, reason: ReasonCRLExpired, noHelp: true,
			before: func(e *env) { e.advance(2 * time.Hour) },
			want:   []string{"cannot check certificates right now", "expired on ", "the site's fault, not yours", "carl"}}
	}},
	{"not allowed", func(t *testing.T, e *env) refusalCase {
		cert, key := e.ca.Client(t, "otto")
		return refusalCase{cert: cert, key: key, status: 403, reason: ReasonNotAllowed, noHelp: true,
			want: []string{"Not allowed here", "does not give access", "otto"}}
	}},
}

// revokedAt is the revocation time of the "revoked" refusal case.
var revokedAt = time.Date(2026, 11, 30, 8, 15, 0, 0, time.UTC)

// TestRefusalPages makes, for each reason, a request from a refused client
// as a browser (Accept: text/html) and as another client, over HTTP/1.1
// and HTTP/2, a GET and a POST with a body: each gets its status, reason
// header, a page naming the certificate and what to do, the security
// headers, and a log line; none reaches the upstream.
func TestRefusalPages(t *testing.T) {
	for _, tt := range refusalCases {
		t.Run(tt.name, func(t *testing.T) {
			eachProtocol(t, "", func(t *testing.T, h2 bool) {
				var tc refusalCase
				e := pageEnv(t, func(c *Config) {
					if tt.name == "not allowed" {
						c.AllowCN = []string{"good"}
					}
				})
				tc = tt.mk(t, e)
				if tc.before != nil {
					tc.before(e)
				}
				c := e.presentingClient(tc.cert, tc.key, h2)
				for _, accept := range []string{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "*/*"} {
					for _, method := range []string{"GET", "POST"} {
						checkRefusalResponse(t, e, c, tc, method, accept)
					}
				}
				if tc.cert != nil {
					cn := strings.TrimSpace(string(appendKV(nil, "cn", tc.cert.Subject.CommonName)))
					e.waitLog("request ", cn, "serial="+identity.SerialHex(tc.cert.SerialNumber), "status="+itoa(tc.status), "reason="+tc.reason)
				} else {
					e.waitLog("request ", "status=496", "reason=no-certificate")
				}
				if got := e.metric(`minica_proxy_requests_refused_total{reason="` + tc.reason + `"}`); !strings.HasSuffix(got, " 4") {
					t.Errorf("refused-requests metric %q; want 4", got)
				}
				if strings.Contains(e.log.String(), "handshake-refused") {
					t.Errorf("page mode refused a handshake:\n%s", e.log)
				}
			})
		})
	}
}

func itoa(n int) string { return big.NewInt(int64(n)).String() }

func clientTemplate(cn string, notBefore, notAfter time.Time) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		NotBefore:   notBefore,
		NotAfter:    notAfter,
	}
}

func (e *env) reload(t *testing.T) {
	t.Helper()
	if err := e.p.Reload(); err != nil {
		t.Fatalf("Reload() error = %v", err)
	}
}

func checkRefusalResponse(t *testing.T, e *env, c *http.Client, tc refusalCase, method, accept string) {
	t.Helper()
	var body io.Reader
	if method == "POST" {
		body = strings.NewReader(strings.Repeat("form=data&", 1000))
	}
	req, err := http.NewRequest(method, e.url("/app/page?x=1"), body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s with Accept %q: %v\n%s", method, accept, err, e.log)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	page := b.String()
	html := strings.HasPrefix(accept, "text/html")
	what := method + " " + map[bool]string{true: "as a browser", false: "as a program"}[html]
	if resp.StatusCode != tc.status {
		t.Errorf("%s: status %d; want %d", what, resp.StatusCode, tc.status)
	}
	wantHeaders := map[string]string{
		RefusalHeader:             tc.reason,
		"Cache-Control":           "no-store",
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
		"Vary":                    "Accept",
		"Referrer-Policy":         "no-referrer",
		"Content-Security-Policy": refusalCSP,
		"Content-Type":            map[bool]string{true: "text/html; charset=utf-8", false: "text/plain; charset=utf-8"}[html],
	}
	for k, v := range wantHeaders {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s: %s = %q; want %q", what, k, got, v)
		}
	}
	if resp.Header.Get("X-Upstream") != "" || strings.Contains(page, "hello from upstream") {
		t.Errorf("%s: the answer came from the upstream", what)
	}
	for _, w := range tc.want {
		if html {
			w = template.HTMLEscapeString(w)
		}
		if !strings.Contains(page, w) {
			t.Errorf("%s: the page lacks %q:\n%s", what, w, page)
		}
	}
	if !strings.Contains(page, tc.reason) {
		t.Errorf("%s: the page does not name the reason code %q", what, tc.reason)
	}
	if gotHelp := strings.Contains(page, testHelpURL); gotHelp == tc.noHelp {
		t.Errorf("%s: help link shown = %v; want %v:\n%s", what, gotHelp, !tc.noHelp, page)
	}
	if tc.cert != nil {
		for _, fact := range []string{identity.SerialHex(tc.cert.SerialNumber), pageTime(tc.cert.NotBefore), pageTime(tc.cert.NotAfter)} {
			if !strings.Contains(page, fact) {
				t.Errorf("%s: the page does not show the certificate's %q", what, fact)
			}
		}
	}
	if html {
		for _, bad := range []string{"<script", "src=", "<link", "<img", "<iframe", "@import", "url("} {
			if strings.Contains(strings.ToLower(page), bad) {
				t.Errorf("the page has %q: it must load nothing and run nothing", bad)
			}
		}
		if !strings.Contains(page, `<style>`+refusalCSS+`</style>`) {
			t.Errorf("the page's style is not the one the CSP hash allows")
		}
	}
}

// The style the CSP allows is the page's, by its SHA-256.
func TestRefusalCSP(t *testing.T) {
	for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", "form-action 'none'", "base-uri 'none'", "style-src 'sha256-"} {
		if !strings.Contains(refusalCSP, want) {
			t.Errorf("CSP %q lacks %q", refusalCSP, want)
		}
	}
}

// A client revoked while connected gets the page of its new reason on its
// next request: on the same connection, judged again after the reload, or
// on a new one if the reload closed it idle.
func TestRefusalPageAfterReload(t *testing.T) {
	e := pageEnv(t, nil)
	cert, key := e.ca.Leaf(t, clientTemplate("good", time.Time{}, time.Time{}))
	c := e.presentingClient(cert, key, false)
	if code, body := e.get(c, "/", nil); code != 200 || body != "hello from upstream" {
		t.Fatalf("before: status %d %q; want 200 from the upstream", code, body)
	}
	at := e.now().Add(-time.Minute).Truncate(time.Second)
	e.setCRL(e.revokedCRL(cert.SerialNumber, at))
	e.reload(t)
	code, body := e.get(c, "/", http.Header{"Accept": {"text/html"}})
	if code != 495 || !strings.Contains(body, "revoked on "+pageTime(at)+" (reason: keyCompromise)") {
		t.Errorf("after revocation: status %d, page:\n%s", code, body)
	}
}

// A revoked intermediate refuses its clients with a page that says so.
func TestRefusalPageRevokedIntermediate(t *testing.T) {
	root := testca.NewRoot(t, "Page Root")
	inter := root.Intermediate(t, "Page Issuing CA")
	cert, key := inter.Client(t, "ivan")
	now := time.Now()
	var crls bytes.Buffer
	crls.Write(inter.CRL(t, 1, now.Add(-time.Minute), time.Hour))
	// The root's CRL revokes the intermediate, with a reason.
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number: big.NewInt(7), ThisUpdate: now.Add(-time.Minute), NextUpdate: now.Add(time.Hour),
		RevokedCertificateEntries: []x509.RevocationListEntry{{SerialNumber: inter.Cert.SerialNumber,
			RevocationTime: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), ReasonCode: int(revoke.CACompromise)}},
	}, root.Cert, root.Key)
	if err != nil {
		t.Fatal(err)
	}
	crls.Write(pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}))
	e := pageEnv(t, func(c *Config) {
		c.LoadCA = func() ([]*x509.Certificate, error) { return []*x509.Certificate{root.Cert, inter.Cert}, nil }
		c.CRL = crlFunc(func() ([]byte, error) { return crls.Bytes(), nil })
	})
	code, body := e.get(e.presentingClient(cert, key, false), "/", nil)
	want := "A certificate authority above your certificate (serial " + identity.SerialHex(inter.Cert.SerialNumber) + ") was revoked on 2026-11-01 00:00:00 UTC (reason: cACompromise)"
	if code != 495 || !strings.Contains(body, want) {
		t.Errorf("status %d; want 495 and %q in:\n%s", code, want, body)
	}
}

// In page mode a valid client still gets through, with its headers; in
// alert mode (the default) a refused one still ends in the handshake.
func TestRefusalModes(t *testing.T) {
	e := pageEnv(t, nil)
	good, key := e.ca.Leaf(t, clientTemplate("good", time.Time{}, time.Time{}))
	if code, body := e.get(e.presentingClient(good, key, false), "/", nil); code != 200 || body != "hello from upstream" {
		t.Errorf("page mode, valid client: status %d %q; want 200 from the upstream", code, body)
	}
	alert := newEnv(t, nil)
	expired, ekey := alert.ca.Leaf(t, clientTemplate("ella", alert.now().Add(-48*time.Hour), alert.now().Add(-time.Hour)))
	if _, err := alert.presentingClient(expired, ekey, false).Get(alert.url("/")); err == nil {
		t.Error("alert mode: an expired client got an HTTP answer; want the handshake refused")
	}
	alert.waitLog("handshake-refused", "reason=expired")
}

func TestRefusalConfigErrors(t *testing.T) {
	tests := []struct {
		name, mode, help string
		wantErr          string
	}{
		{"unknown mode", "popup", "", `config: unknown refusal mode "popup" (known: alert, page)`},
		{"help without page", "alert", testHelpURL, `config: a help URL ("https://pki.example.com/renew") needs the refusal mode "page"`},
		{"help by default mode", "", testHelpURL, `needs the refusal mode "page"`},
		{"relative help", "page", "/renew", `config: help URL "/renew": want an absolute http:// or https:// URL`},
		{"other scheme", "page", "javascript:alert(1)", `help URL "javascript:alert(1)": want an absolute`},
		{"user info", "page", "https://user:pw@pki.example.com/", `without user info`},
		{"no host", "page", "https:///renew", `want an absolute`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{Refusal: tt.mode, HelpURL: tt.help}
			err := c.checkRefusal()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("checkRefusal() error = %v; want containing %q", err, tt.wantErr)
			}
		})
	}
	for _, mode := range []string{"", "alert", "ALERT", "Page"} {
		c := Config{Refusal: mode}
		if err := c.checkRefusal(); err != nil {
			t.Errorf("checkRefusal(%q) error = %v", mode, err)
		}
	}
}

func TestWantsHTML(t *testing.T) {
	tests := []struct {
		accept []string
		want   bool
	}{
		{nil, false},
		{[]string{"*/*"}, false},
		{[]string{"text/html"}, true},
		{[]string{"text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"}, true},
		{[]string{"application/json", "text/html;q=0.5"}, true},
		{[]string{"text/html;q=0"}, false},
		{[]string{"text/html;q=0.0, text/plain"}, false},
		{[]string{"application/xhtml+xml"}, true},
		{[]string{"text/plain, text/htmlx"}, false},
		{[]string{"text/html;q=bad"}, false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		for _, a := range tt.accept {
			r.Header.Add("Accept", a)
		}
		if got := wantsHTML(r); got != tt.want {
			t.Errorf("wantsHTML(Accept %q) = %v; want %v", tt.accept, got, tt.want)
		}
	}
}

// Names from a certificate are shown without control or invisible
// formatting characters, and HTML-escaped on the page.
func TestRefusalPageShowsNamesSafely(t *testing.T) {
	e := pageEnv(t, nil)
	cert, key := testca.New(t, "Evil\u202eAC <b>").Client(t, "<script>alert(1)</script>\x1b[31m")
	c := e.presentingClient(cert, key, false)
	_, page := e.get(c, "/", http.Header{"Accept": {"text/html"}})
	for _, bad := range []string{"<script>", "\u202e", "\x1b", "<b>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page has %q:\n%s", bad, page)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;\uFFFD[31m") {
		t.Errorf("the page does not show the CN escaped:\n%s", page)
	}
	_, text := e.get(c, "/", nil)
	if strings.ContainsAny(text, "\x1b\u202e") {
		t.Errorf("the text answer has a control character:\n%q", text)
	}
}

// Under a policy, the refusals of a route's rule get pages that name the
// route; one that wants more days left says how many, and links to the
// help URL (renewal); other refusals of the policy keep their answers.
func TestRefusalPagesOfPolicyRoutes(t *testing.T) {
	e := pageEnv(t, func(c *Config) {
		file := filepath.Join(t.TempDir(), "front.json")
		policy := `{"routes": [
  {"name": "admin", "host": "*", "path": "/admin", "upstream": "` + c.Upstream + `", "allow": {"cn": ["root"]}},
  {"name": "payroll", "host": "*", "path": "/pay", "upstream": "` + c.Upstream + `", "allow": {"any": true, "min_days_left": 30}},
  {"name": "rest", "host": "*", "path": "/", "upstream": "` + c.Upstream + `", "allow": {"any": true}}
]}`
		if err := os.WriteFile(file, []byte(policy), 0o644); err != nil {
			t.Fatal(err)
		}
		c.PolicyFile, c.Upstream = file, ""
	})
	cert, key := e.ca.Leaf(t, clientTemplate("good", e.now().Add(-time.Hour), e.now().Add(12*24*time.Hour+time.Hour)))
	c := e.presentingClient(cert, key, false)
	html := http.Header{"Accept": {"text/html"}}
	if code, body := e.get(c, "/", html); code != 200 || body != "hello from upstream" {
		t.Fatalf("route rest: status %d %q; want the upstream's 200", code, body)
	}
	tests := []struct {
		path   string
		status int
		reason string
		want   []string
	}{
		{"/admin/users", 403, ReasonNotAllowed, []string{"Not allowed here", "the rules of this part of the site (“admin”) do not let it in"}},
		{"/pay/slips", 403, ReasonDaysLeft, []string{"expires too soon", "12 days from now", "(“payroll”) wants at least 30 days left", testHelpURL, "Renew your certificate"}},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest("GET", e.url(tt.path), nil)
		req.Header = html.Clone()
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || resp.Header.Get(RefusalHeader) != tt.reason {
			t.Errorf("%s: status %d, %s %q; want %d, %q", tt.path, resp.StatusCode, RefusalHeader, resp.Header.Get(RefusalHeader), tt.status, tt.reason)
		}
		for _, w := range tt.want {
			if !strings.Contains(b.String(), template.HTMLEscapeString(w)) {
				t.Errorf("%s: the page lacks %q:\n%s", tt.path, w, b.String())
			}
		}
		e.waitLog("request ", "uri="+tt.path, "reason="+tt.reason)
	}
	// A bad path: the policy's own answer (400), not a refusal page.
	resp, err := c.Get(e.url("/a%2Fb"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get(RefusalHeader) != "" || resp.StatusCode == 200 {
		t.Errorf("bad path: status %d, %s %q; want the policy's refusal without a page", resp.StatusCode, RefusalHeader, resp.Header.Get(RefusalHeader))
	}
}

// A resumed TLS session is judged like a full handshake: a client revoked
// since its session began gets the page on the resumed connection.
func TestRefusalPageOnResumedSession(t *testing.T) {
	e := pageEnv(t, nil)
	cert, key := e.ca.Leaf(t, clientTemplate("good", time.Time{}, time.Time{}))
	c, _ := e.resumingClient(t, cert, key)
	at := e.now().Add(-time.Minute).Truncate(time.Second)
	e.setCRL(e.revokedCRL(cert.SerialNumber, at))
	e.reload(t)
	resp, err := c.Get(e.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !resp.TLS.DidResume || resp.StatusCode != 495 || resp.Header.Get(RefusalHeader) != ReasonRevoked {
		t.Errorf("resumed %v, status %d, %s %q; want a resumed session refused as revoked (495)",
			resp.TLS.DidResume, resp.StatusCode, RefusalHeader, resp.Header.Get(RefusalHeader))
	}
}
