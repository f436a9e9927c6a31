package serve

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"minica/ca"
	"minica/revoke"
	"minica/serve/renew"
)

// The renewal handler also answers /bootstrap, counted under "bootstrap";
// without one, /bootstrap answers 404 with the reason bootstrap-disabled.
func TestBootstrapMount(t *testing.T) {
	rn := &fakeRenewer{}
	f := newFixture(t, func(c *Config) { c.Renew = rn })
	if rec := f.do(t, http.MethodPost, renew.TokenPath); rec.Code != 200 || rec.Body.String() != "renewed "+renew.TokenPath {
		t.Errorf("POST %s = %d %q; want the renewal handler's answer", renew.TokenPath, rec.Code, rec.Body)
	}
	if m := f.metrics(t); !hasLine(m, `minica_serve_requests_total{endpoint="bootstrap",code="200"} 1`) {
		t.Errorf("metrics lack the bootstrap request:\n%s", m)
	}
	plain := newFixture(t, nil)
	rec := plain.do(t, http.MethodPost, renew.TokenPath)
	var p struct{ Reason, Detail string }
	json.Unmarshal(rec.Body.Bytes(), &p)
	if rec.Code != 404 || rec.Header().Get("Content-Type") != renew.ProblemType || p.Reason != renew.RefuseBootstrapOff || p.Detail == "" {
		t.Errorf("POST %s without a renewal handler = %d %q; want 404 %s with a sentence", renew.TokenPath, rec.Code, rec.Body, renew.RefuseBootstrapOff)
	}
}

// A machine's first certificate through the Server's handler, as serve
// mounts a real Renewer: the token in the Authorization header gets the
// certificate once; a token in the query is refused before it is looked
// up; the log never holds the token.
func TestBootstrapThroughServer(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		// The Renewer has a handle of its own, as cmd/minica makes it.
		own, err := ca.Open(c.CA.Dir().Path())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { own.Close() })
		own.Now = c.Now
		rn, err := renew.New(renew.Config{CA: own, Signer: c.Signer, Now: c.Now, Log: c.Log, LockTimeout: 50 * time.Millisecond,
			CRL: func() *revoke.CRL { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		c.Renew = rn
	})
	// Made through another handle, as `minica token` would.
	c := f.other(t)
	unlock, err := c.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	created, err := c.CreateToken("web", ca.EnrollIdentity{Profile: ca.Server, DNSNames: []string{"web.example.com"}}, time.Hour)
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	// Each try is another machine's key: a used token answers its own
	// key again.
	post := func(target string) *httptest.ResponseRecorder {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{DNSNames: []string{"web.example.com"}}, key)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, target, bytes.NewReader(csr))
		req.Header.Set("Content-Type", renew.CSRType)
		req.Header.Set("Authorization", "Bearer "+created.Token)
		req.TLS = &tls.ConnectionState{}
		rec := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(rec, req)
		return rec
	}
	tests := []struct {
		target string
		code   int
		ctype  string
	}{
		{renew.TokenPath + "?token=" + created.Token, 400, renew.ProblemType},
		{renew.TokenPath + "/", 404, "text/plain; charset=utf-8"},
		{renew.TokenPath, 200, renew.ChainType},
		{renew.TokenPath, 403, renew.ProblemType},
	}
	for _, tt := range tests {
		rec := post(tt.target)
		if rec.Code != tt.code || rec.Header().Get("Content-Type") != tt.ctype {
			t.Errorf("POST %s = %d %s %q; want %d %s", strings.ReplaceAll(tt.target, created.Token, "TOKEN"), rec.Code, rec.Header().Get("Content-Type"), rec.Body, tt.code, tt.ctype)
		}
		if got := rec.Header().Get("Cache-Control"); got != "no-store" {
			t.Errorf("Cache-Control = %q; want no-store", got)
		}
	}
	m := f.metrics(t)
	for _, want := range []string{
		"minica_serve_bootstraps_total 1",
		`minica_serve_bootstraps_refused_total{reason="query-not-allowed"} 1`,
		`minica_serve_bootstraps_refused_total{reason="token-used"} 1`,
		`minica_serve_requests_total{endpoint="bootstrap",code="200"} 1`,
	} {
		if !hasLine(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, m)
		}
	}
	if log := f.logText(); strings.Contains(log, created.Token) || !strings.Contains(log, " bootstrapped name=web ") {
		t.Errorf("the log holds the token or lacks the bootstrap:\n%s", log)
	}
}
