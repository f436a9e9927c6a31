package pagesec

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCSP(t *testing.T) {
	css := "body{color:red}"
	sum := sha256.Sum256([]byte(css))
	got := CSP(css, "'self'")
	for _, want := range []string{
		"default-src 'none'",
		"style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'",
		"form-action 'self'",
		"frame-ancestors 'none'",
		"base-uri 'none'",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("CSP(%q) = %q, lacks %q", css, got, want)
		}
	}
	if CSP(css+" ", "'none'") == got {
		t.Error("CSP does not depend on the style")
	}
}

func TestSetHeaders(t *testing.T) {
	h := http.Header{}
	SetHeaders(h, "default-src 'none'")
	want := map[string]string{
		"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
		"Content-Security-Policy": "default-src 'none'", "X-Frame-Options": "DENY",
		"Referrer-Policy": "no-referrer",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func TestCrossOrigin(t *testing.T) {
	tests := []struct {
		name    string
		tls     bool
		headers map[string]string
		want    string
	}{
		{"no origin", true, nil, ""},
		{"same origin", true, map[string]string{"Origin": "https://pki.example.com:8443"}, ""},
		{"same origin, host in another case", true, map[string]string{"Origin": "https://PKI.example.com:8443"}, ""},
		{"plain HTTP", false, map[string]string{"Origin": "http://pki.example.com:8443"}, ""},
		{"another site", true, map[string]string{"Origin": "https://evil.example"}, "origin"},
		{"another port", true, map[string]string{"Origin": "https://pki.example.com"}, "origin"},
		{"another scheme", true, map[string]string{"Origin": "http://pki.example.com:8443"}, "origin"},
		{"opaque origin", true, map[string]string{"Origin": "null"}, "origin"},
		{"cross-site fetch", true, map[string]string{"Sec-Fetch-Site": "cross-site"}, "cross-site"},
	}
	for _, tt := range tests {
		r, _ := http.NewRequest(http.MethodPost, "https://pki.example.com:8443/form", nil)
		r.Host = "pki.example.com:8443"
		if tt.tls {
			r.TLS = &tls.ConnectionState{}
		}
		for k, v := range tt.headers {
			r.Header.Set(k, v)
		}
		if got := CrossOrigin(r); got != tt.want {
			t.Errorf("%s: CrossOrigin() = %q; want %q", tt.name, got, tt.want)
		}
	}
}

// WritePage answers the executed template with its length; a template
// that fails writes nothing, for the caller to answer 500.
func TestWritePage(t *testing.T) {
	ok := template.Must(template.New("ok").Parse(`<p>{{.}}</p>`))
	rec := httptest.NewRecorder()
	if err := WritePage(rec, http.StatusConflict, ok, "a<b"); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusConflict || rec.Body.String() != "<p>a&lt;b</p>" ||
		rec.Header().Get("Content-Type") != "text/html; charset=utf-8" || rec.Header().Get("Content-Length") != "13" {
		t.Errorf("WritePage = %d %q %v; want 409, the escaped page, its type and length", rec.Code, rec.Body, rec.Header())
	}
	bad := template.Must(template.New("bad").Parse(`{{.Missing}}`))
	rec = httptest.NewRecorder()
	if err := WritePage(rec, http.StatusOK, bad, 42); err == nil || rec.Body.Len() != 0 || len(rec.Header()) != 0 {
		t.Errorf("WritePage with a failing template = %v, wrote %q %v; want an error and nothing written", err, rec.Body, rec.Header())
	}
}
