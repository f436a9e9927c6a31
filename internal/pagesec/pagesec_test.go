package pagesec

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
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
