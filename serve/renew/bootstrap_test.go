package renew

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"minica/ca"
	"minica/formats"
	"minica/serve/internal/servetest"
)

// token makes a pending bootstrap token for a server certificate name,
// for name.example.com, through the fixture's CA.
func (rf *renewFixture) token(t *testing.T, name string) string {
	t.Helper()
	unlock, err := rf.CA.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	created, err := rf.CA.CreateToken(name, ca.EnrollIdentity{Profile: ca.Server, DNSNames: []string{name + ".example.com"}}, ca.DefaultTokenLifetime)
	if err != nil {
		t.Fatal(err)
	}
	return created.Token
}

// bootReq is a POST /bootstrap over a simulated TLS connection without a
// client certificate, from 192.0.2.7 unless remote says otherwise.
type bootReq struct {
	auth   string // the Authorization header; none when empty
	ctype  string
	body   []byte
	remote string
	target string // TokenPath unless set
}

func (rf *renewFixture) boot(t *testing.T, br bootReq) *httptest.ResponseRecorder {
	t.Helper()
	if br.target == "" {
		br.target = TokenPath
	}
	req := httptest.NewRequest(http.MethodPost, br.target, bytes.NewReader(br.body))
	req.RemoteAddr = "192.0.2.7:41000"
	if br.remote != "" {
		req.RemoteAddr = br.remote
	}
	if br.auth != "" {
		req.Header.Set("Authorization", br.auth)
	}
	if br.ctype != "" {
		req.Header.Set("Content-Type", br.ctype)
	}
	req.TLS = &tls.ConnectionState{}
	rec := httptest.NewRecorder()
	rf.rn.ServeHTTP(rec, req)
	return rec
}

// bootCSR is a DER CSR for a new key naming dns (none when empty).
func bootCSR(t *testing.T, dns ...string) []byte {
	t.Helper()
	der, _ := csrFor(t, &x509.CertificateRequest{DNSNames: dns})
	return der
}

// redeemWith posts token and a CSR for name.example.com.
func (rf *renewFixture) redeemWith(t *testing.T, token, name, remote string) *httptest.ResponseRecorder {
	t.Helper()
	return rf.boot(t, bootReq{auth: "Bearer " + token, ctype: CSRType, body: bootCSR(t, name+".example.com"), remote: remote})
}

// tokenStatus is the status of token's enrollment, read through another
// handle.
func (rf *renewFixture) tokenStatus(t *testing.T, token string) ca.EnrollmentStatus {
	t.Helper()
	e, err := rf.Other(t).LookupToken(token)
	if err != nil {
		t.Fatal(err)
	}
	return e.StatusAt(rf.Clock.Now())
}

// wrongToken is a token of the right shape that matches nothing, the
// i-th of its kind.
func wrongToken(i int) string { return fmt.Sprintf("%042dA", i) }

// noTokenLogged fails when the log holds any of tokens.
func noTokenLogged(t *testing.T, log string, tokens ...string) {
	t.Helper()
	for _, tok := range tokens {
		if tok != "" && strings.Contains(log, tok) {
			t.Errorf("the log holds a token:\n%s", log)
		}
	}
}

func TestBootstrapIssues(t *testing.T) {
	rf := newRenewFixture(t, nil)
	for _, tc := range []struct {
		name, ctype string
		body        func(der []byte) []byte
		csrNames    bool
	}{
		{"der", CSRType, func(der []byte) []byte { return der }, true},
		{"pem", PEMType, func(der []byte) []byte {
			return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
		}, true},
		// A CSR may name nothing: the certificate says what the token says.
		{"no names", CSRType, func(der []byte) []byte { return der }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "web-" + strings.ReplaceAll(tc.name, " ", "-")
			token := rf.token(t, name)
			tmpl := &x509.CertificateRequest{}
			if tc.csrNames {
				tmpl.DNSNames = []string{name + ".example.com"}
			}
			der, key := csrFor(t, tmpl)
			rec := rf.boot(t, bootReq{auth: "Bearer " + token, ctype: tc.ctype, body: tc.body(der)})
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != ChainType {
				t.Fatalf("POST %s = %d %q; want 200 %s", TokenPath, rec.Code, rec.Body, ChainType)
			}
			if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control = %q; want no-store", cc)
			}
			certs, err := formats.ParseCertificates(rec.Body.Bytes())
			if err != nil || len(certs) != 2 || !certs[1].Equal(rf.CA.Cert) {
				t.Fatalf("answer: %d certificates, %v; want the leaf and the CA", len(certs), err)
			}
			leaf := certs[0]
			roots := x509.NewCertPool()
			roots.AddCert(rf.CA.Cert)
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name + ".example.com", CurrentTime: rf.Clock.Now(),
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				t.Errorf("the certificate does not verify against the CA for %s.example.com: %v", name, err)
			}
			if err := formats.KeyMatchesCertificate(key, leaf); err != nil {
				t.Errorf("the certificate is not for the CSR's key: %v", err)
			}
			rec2, err := rf.Other(t).Record(leaf.SerialNumber)
			if err != nil || rec2.Name != name || rec2.Profile != ca.Server {
				t.Fatalf("record of the certificate: %+v, %v; want name %s profile server", rec2, err, name)
			}
			if st := rf.tokenStatus(t, token); st != ca.EnrollUsed {
				t.Errorf("token status %s; want used", st)
			}
			want := " bootstrapped name=" + name + " serial=" + rec2.Serial + " id=" + ca.EnrollmentID(token) + " profile=server"
			if log := rf.Log.String(); !strings.Contains(log, want) || !strings.Contains(log, "client=192.0.2.7:41000") {
				t.Errorf("log lacks %q and the client:\n%s", want, log)
			}
			noTokenLogged(t, rf.Log.String(), token)
		})
	}
	if m := rf.metrics(t); !servetest.HasLine(m, "minica_serve_bootstraps_total 3") {
		t.Errorf("metrics lack minica_serve_bootstraps_total 3:\n%s", m)
	}
}

func TestBootstrapRefusals(t *testing.T) {
	caTrue := func(t *testing.T) []byte {
		bc, _ := asn1.Marshal(struct{ IsCA bool }{true})
		der, _ := csrFor(t, &x509.CertificateRequest{DNSNames: []string{"web.example.com"},
			ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 19}, Critical: true, Value: bc}}})
		return der
	}
	tests := []struct {
		name       string
		mod        func(*Config)
		setup      func(t *testing.T, rf *renewFixture, token string) bootReq
		wantStatus int
		wantReason string
		wantDetail string
		wantAuth   string // WWW-Authenticate
		// wantAfter is the token's status after the refusal; "" when the
		// test makes it something other than pending.
		wantAfter ca.EnrollmentStatus
		// goodAfter: the same token then gets its certificate.
		goodAfter bool
	}{
		{name: "second use", wantStatus: 403, wantReason: RefuseTokenUsed, wantDetail: "was used at 2030-01-02T03:04:05Z from 192.0.2.7",
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				if rec := rf.redeemWith(t, token, "web", ""); rec.Code != 200 {
					t.Fatalf("first use = %d %q", rec.Code, rec.Body)
				}
				return bootReq{auth: "Bearer " + token, ctype: CSRType, body: bootCSR(t, "web.example.com"), remote: "198.51.100.4:5000"}
			}},
		{name: "unknown token", wantStatus: 403, wantReason: RefuseUnknownToken, wantAfter: ca.EnrollPending,
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				return bootReq{auth: "Bearer " + wrongToken(0), ctype: CSRType, body: bootCSR(t, "web.example.com")}
			}},
		{name: "cancelled", wantStatus: 403, wantReason: RefuseTokenCancelled, wantDetail: "was cancelled at",
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				c := rf.Other(t)
				unlock, _ := c.Lock(time.Second)
				defer unlock()
				if _, err := c.CancelEnrollment(ca.KindToken, "web"); err != nil {
					t.Fatal(err)
				}
				return bootReq{auth: "Bearer " + token, ctype: CSRType, body: bootCSR(t, "web.example.com")}
			}},
		{name: "expired", wantStatus: 403, wantReason: RefuseTokenExpired, wantDetail: "expired at 2030-01-02T04:04:05Z",
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				rf.Clock.Advance(ca.DefaultTokenLifetime)
				return bootReq{auth: "Bearer " + token, ctype: CSRType, body: bootCSR(t, "web.example.com")}
			}},
		// The name was issued by hand after the token was made: refused
		// before the token is spent.
		{name: "name taken", wantStatus: 409, wantReason: RefuseNameTaken, wantDetail: "the token is still good", wantAfter: ca.EnrollPending,
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				rf.issue(t, "web", ca.Server, time.Hour)
				return bootReq{auth: "Bearer " + token, ctype: CSRType, body: bootCSR(t, "web.example.com")}
			}},
		// A spent token with a bad CSR is spent all the same, never "still good".
		{name: "expired with a bad CSR", wantStatus: 403, wantReason: RefuseTokenExpired,
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				rf.Clock.Advance(ca.DefaultTokenLifetime)
				return bootReq{auth: "Bearer " + token, ctype: CSRType, body: caTrue(t)}
			}},
		{name: "no Authorization", wantStatus: 401, wantReason: RefuseTokenRequired, wantAuth: "Bearer", wantAfter: ca.EnrollPending,
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				return bootReq{ctype: CSRType, body: bootCSR(t, "web.example.com")}
			}},
		{name: "Basic", wantStatus: 401, wantReason: RefuseTokenRequired, wantAuth: `Bearer error="invalid_token"`, wantAfter: ca.EnrollPending,
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				return bootReq{auth: "Basic " + token, ctype: CSRType, body: bootCSR(t, "web.example.com")}
			}},
		{name: "malformed token", wantStatus: 401, wantReason: RefuseTokenRequired, wantAuth: `Bearer error="invalid_token"`, wantAfter: ca.EnrollPending,
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				return bootReq{auth: "Bearer " + token + "x", ctype: CSRType, body: bootCSR(t, "web.example.com")}
			}},
		{name: "token in the query", wantStatus: 400, wantReason: RefuseQuery, wantAfter: ca.EnrollPending,
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				return bootReq{target: TokenPath + "?token=" + token, ctype: CSRType, body: bootCSR(t, "web.example.com")}
			}},
		{name: "too large", mod: func(c *Config) { c.MaxCSR = 100 }, wantStatus: 413, wantReason: RefuseTooLarge, wantAfter: ca.EnrollPending,
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				return bootReq{auth: "Bearer " + token, ctype: CSRType, body: bootCSR(t, "web.example.com")}
			}},
		{name: "media type", wantStatus: 415, wantReason: RefuseMediaType, wantAfter: ca.EnrollPending, goodAfter: true,
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				return bootReq{auth: "Bearer " + token, ctype: "application/json", body: bootCSR(t, "web.example.com")}
			}},
		{name: "not a CSR", wantStatus: 400, wantReason: RefuseBadCSR, wantAfter: ca.EnrollPending, goodAfter: true,
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				return bootReq{auth: "Bearer " + token, ctype: CSRType, body: []byte("hello")}
			}},
		{name: "another name", wantStatus: 400, wantReason: RefuseBadCSR, wantDetail: "the token is still good",
			wantAfter: ca.EnrollPending, goodAfter: true,
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				return bootReq{auth: "Bearer " + token, ctype: CSRType, body: bootCSR(t, "admin.example.com")}
			}},
		{name: "CA:TRUE", wantStatus: 400, wantReason: RefuseBadCSR, wantDetail: "CA:TRUE", wantAfter: ca.EnrollPending, goodAfter: true,
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				return bootReq{auth: "Bearer " + token, ctype: CSRType, body: caTrue(t)}
			}},
		{name: "busy", wantStatus: 503, wantReason: RefuseBusy, wantAfter: ca.EnrollPending,
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				unlock, err := rf.Other(t).Lock(time.Second)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(unlock)
				return bootReq{auth: "Bearer " + token, ctype: CSRType, body: bootCSR(t, "web.example.com")}
			}},
		// While the CA key's token cannot sign, the bootstrap token is
		// kept for the retry.
		{name: "signer unavailable", wantStatus: 503, wantReason: RefuseSignerUnavailable, wantDetail: "CKR_DEVICE_REMOVED", wantAfter: ca.EnrollPending,
			mod: func(c *Config) { c.Signer = awaySigner{c.Signer} },
			setup: func(t *testing.T, rf *renewFixture, token string) bootReq {
				return bootReq{auth: "Bearer " + token, ctype: CSRType, body: bootCSR(t, "web.example.com")}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rf := newRenewFixture(t, tt.mod)
			token := rf.token(t, "web")
			rec := rf.boot(t, tt.setup(t, rf, token))
			p := problemOf(t, rec)
			if rec.Code != tt.wantStatus || p.Reason != tt.wantReason || !strings.Contains(p.Detail, tt.wantDetail) {
				t.Fatalf("POST %s = %d %+v; want %d reason %q detail containing %q", TokenPath, rec.Code, p, tt.wantStatus, tt.wantReason, tt.wantDetail)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tt.wantAuth {
				t.Errorf("WWW-Authenticate = %q; want %q", got, tt.wantAuth)
			}
			if (rec.Code == 503) != (rec.Header().Get("Retry-After") != "") {
				t.Errorf("%d with Retry-After %q; want Retry-After on a 503 only", rec.Code, rec.Header().Get("Retry-After"))
			}
			if strings.Contains(rec.Body.String(), token) {
				t.Errorf("the answer echoes the token: %s", rec.Body)
			}
			if tt.wantAfter != "" {
				if st := rf.tokenStatus(t, token); st != tt.wantAfter {
					t.Errorf("token status after the refusal %s; want %s", st, tt.wantAfter)
				}
			}
			log := rf.Log.String()
			if !strings.Contains(log, " bootstrap-refused reason="+tt.wantReason+" status=") {
				t.Errorf("no bootstrap-refused line in the log:\n%s", log)
			}
			noTokenLogged(t, log, token)
			m := rf.metrics(t)
			if want := `minica_serve_bootstraps_refused_total{reason="` + tt.wantReason + `"} 1`; !servetest.HasLine(m, want) {
				t.Errorf("metrics lack %s:\n%s", want, m)
			}
			if tt.goodAfter {
				if rec := rf.redeemWith(t, token, "web", ""); rec.Code != 200 {
					t.Fatalf("the same token then = %d %q; want 200", rec.Code, rec.Body)
				}
			}
		})
	}
}

// The ID of an enrollment is logged only once the token matched one.
func TestBootstrapLogsIDOnlyWhenMatched(t *testing.T) {
	rf := newRenewFixture(t, nil)
	token := rf.token(t, "web")
	wrong := wrongToken(7)
	rf.boot(t, bootReq{auth: "Bearer " + wrong, ctype: CSRType, body: bootCSR(t, "web.example.com")})
	rf.boot(t, bootReq{auth: "Bearer " + token, ctype: CSRType, body: bootCSR(t, "admin.example.com")})
	log := rf.Log.String()
	if strings.Contains(log, ca.EnrollmentID(wrong)) {
		t.Errorf("the log names the ID of a token that matched nothing:\n%s", log)
	}
	if !strings.Contains(log, "reason=bad-csr status=400 client=192.0.2.7:41000 detail=") || !strings.Contains(log, " id="+ca.EnrollmentID(token)+" name=web") {
		t.Errorf("the bad-csr line lacks the enrollment's ID and name:\n%s", log)
	}
	noTokenLogged(t, log, token, wrong)
}

func TestBootstrapOutsideTLS(t *testing.T) {
	rf := newRenewFixture(t, nil)
	rec := rf.do(t, http.MethodPost, TokenPath)
	if p := problemOf(t, rec); rec.Code != 403 || p.Reason != RefuseHTTPS {
		t.Errorf("POST over HTTP = %d %+v; want 403 %s", rec.Code, p, RefuseHTTPS)
	}
	rec = rf.do(t, http.MethodGet, TokenPath)
	if p := problemOf(t, rec); rec.Code != 405 || p.Reason != RefuseMethod || rec.Header().Get("Allow") != "POST" {
		t.Errorf("GET = %d %+v; want 405 %s with Allow: POST", rec.Code, p, RefuseMethod)
	}
}

// Concurrent tries with one token: one certificate, the others token-used.
func TestBootstrapOnce(t *testing.T) {
	rf := newRenewFixture(t, nil)
	token := rf.token(t, "web")
	codes := make([]int, 8)
	var wg sync.WaitGroup
	for i := range codes {
		br := bootReq{auth: "Bearer " + token, ctype: CSRType, body: bootCSR(t, "web.example.com")}
		wg.Go(func() { codes[i] = rf.boot(t, br).Code })
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		switch c {
		case 200:
			ok++
		case 403:
		default:
			t.Errorf("a concurrent try = %d; want 200 or 403", c)
		}
	}
	if ok != 1 {
		t.Errorf("%d of %d concurrent tries got a certificate; want 1", ok, len(codes))
	}
	if recs, _ := rf.Other(t).RecordsByName("web"); len(recs) != 1 {
		t.Errorf("web has %d records; want 1", len(recs))
	}
}

func TestBootstrapTriesBounded(t *testing.T) {
	wrong := wrongToken
	t.Run("per address", func(t *testing.T) {
		rf := newRenewFixture(t, nil)
		token := rf.token(t, "web")
		const from = "203.0.113.9:1000"
		// Tries whose token is good do not count: a CSR refused, the same
		// token again.
		for range DefaultTokenBurst + 2 {
			if rec := rf.boot(t, bootReq{auth: "Bearer " + token, ctype: CSRType, body: bootCSR(t, "admin.example.com"), remote: from}); rec.Code != 400 {
				t.Fatalf("a bad CSR with a good token = %d %q; want 400", rec.Code, rec.Body)
			}
		}
		for i := range DefaultTokenBurst {
			if rec := rf.boot(t, bootReq{auth: "Bearer " + wrong(i), ctype: CSRType, body: bootCSR(t, "web.example.com"), remote: from}); rec.Code != 403 {
				t.Fatalf("wrong token %d = %d %q; want 403", i+1, rec.Code, rec.Body)
			}
		}
		// Beyond the bound every try from the address is refused before
		// its token is looked up, the good one too.
		for _, tok := range []string{wrong(20), token} {
			rec := rf.boot(t, bootReq{auth: "Bearer " + tok, ctype: CSRType, body: bootCSR(t, "web.example.com"), remote: from})
			if p := problemOf(t, rec); rec.Code != 429 || p.Reason != RefuseRateLimited || rec.Header().Get("Retry-After") != "6" {
				t.Fatalf("a try past the bound = %d %+v Retry-After %q; want 429 %s 6", rec.Code, p, rec.Header().Get("Retry-After"), RefuseRateLimited)
			}
		}
		// Another address is not bound by it.
		if rec := rf.boot(t, bootReq{auth: "Bearer " + wrong(21), ctype: CSRType, body: bootCSR(t, "web.example.com"), remote: "203.0.113.10:1000"}); rec.Code != 403 {
			t.Errorf("a wrong token from another address = %d; want 403", rec.Code)
		}
		// One try a minute / DefaultTokenRate later.
		rf.Clock.Advance(time.Minute / DefaultTokenRate)
		if rec := rf.redeemWith(t, token, "web", from); rec.Code != 200 {
			t.Errorf("the good token %s later = %d %q; want 200", time.Minute/DefaultTokenRate, rec.Code, rec.Body)
		}
		if st := rf.tokenStatus(t, token); st != ca.EnrollUsed {
			t.Errorf("token status %s; want used", st)
		}
		m := rf.metrics(t)
		for _, want := range []string{
			`minica_serve_bootstraps_refused_total{reason="unknown-token"} 11`,
			`minica_serve_bootstraps_refused_total{reason="rate-limited"} 2`,
			`minica_serve_bootstraps_refused_total{reason="bad-csr"} 12`,
			"minica_serve_bootstraps_total 1",
		} {
			if !servetest.HasLine(m, want) {
				t.Errorf("metrics lack %s:\n%s", want, m)
			}
		}
	})
	t.Run("IPv6 /64", func(t *testing.T) {
		rf := newRenewFixture(t, func(c *Config) { c.TokenRate, c.TokenBurst = 1, 2 })
		for i, from := range []string{"[2001:db8:1:2::1]:1000", "[2001:db8:1:2::2]:1000"} {
			if rec := rf.boot(t, bootReq{auth: "Bearer " + wrong(i), ctype: CSRType, body: bootCSR(t), remote: from}); rec.Code != 403 {
				t.Fatalf("wrong token %d = %d; want 403", i+1, rec.Code)
			}
		}
		if rec := rf.boot(t, bootReq{auth: "Bearer " + wrong(3), ctype: CSRType, body: bootCSR(t), remote: "[2001:db8:1:2::3]:1000"}); rec.Code != 429 {
			t.Errorf("a third address of the /64 = %d; want 429", rec.Code)
		}
	})
	t.Run("total", func(t *testing.T) {
		rf := newRenewFixture(t, func(c *Config) { c.TokenTotalRate, c.TokenTotalBurst = 3, 3 })
		for i := range 3 {
			rec := rf.boot(t, bootReq{auth: "Bearer " + wrong(i), ctype: CSRType, body: bootCSR(t), remote: fmt.Sprintf("198.51.100.%d:1000", i+1)})
			if rec.Code != 403 {
				t.Fatalf("wrong token %d = %d; want 403", i+1, rec.Code)
			}
		}
		rec := rf.boot(t, bootReq{auth: "Bearer " + wrong(4), ctype: CSRType, body: bootCSR(t), remote: "198.51.100.9:1000"})
		if p := problemOf(t, rec); rec.Code != 429 || rec.Header().Get("Retry-After") != "20" {
			t.Errorf("a fourth address past the total = %d %+v Retry-After %q; want 429 20", rec.Code, p, rec.Header().Get("Retry-After"))
		}
	})
}

// A machine that lost the answer asks again with the same key and gets the
// same certificate; another key finds the token used.
func TestBootstrapAgainWithTheSameKey(t *testing.T) {
	rf := newRenewFixture(t, nil)
	token := rf.token(t, "web")
	der := bootCSR(t, "web.example.com")
	first := rf.boot(t, bootReq{auth: "Bearer " + token, ctype: CSRType, body: der})
	again := rf.boot(t, bootReq{auth: "Bearer " + token, ctype: CSRType, body: der})
	if first.Code != 200 || again.Code != 200 || first.Body.String() != again.Body.String() {
		t.Fatalf("first %d, again %d %q; want the same certificate twice", first.Code, again.Code, again.Body)
	}
	other := rf.boot(t, bootReq{auth: "Bearer " + token, ctype: CSRType, body: bootCSR(t, "web.example.com")})
	if other.Code != 403 || !strings.Contains(other.Body.String(), RefuseTokenUsed) {
		t.Errorf("another key = %d %q; want 403 token-used", other.Code, other.Body)
	}
}
