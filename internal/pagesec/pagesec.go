// Package pagesec holds what every self-contained HTML page minica serves
// (the proxy's refusal pages, serve's enrollment pages) sends to keep a
// browser from loading, framing, caching or leaking anything: one place for
// the Content-Security-Policy and the security headers.
package pagesec

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// CSP is the Content-Security-Policy of a page whose only style is css,
// inline and allowed by its hash: nothing else is loaded, no script runs,
// no frame may hold it, and forms may post only to formAction ('none' or
// 'self').
func CSP(css, formAction string) string {
	sum := sha256.Sum256([]byte(css))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; form-action " + formAction + "; frame-ancestors 'none'; base-uri 'none'"
}

// SetHeaders sets on h the headers every such page carries: never cached,
// never sniffed, never framed, never a referrer, and csp.
func SetHeaders(h http.Header, csp string) {
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}

// SetFormHeaders sets on h the headers of a page with a form that posts
// back to its own site (enrollment, sign-in): those of SetHeaders, no
// Pragma cache either, and a referrer for the site itself only. Not
// no-referrer: under it browsers send "Origin: null" with the form's POST
// (Fetch, "serializing a request origin"), which CrossOrigin refuses;
// same-origin keeps the page's origin on it, and no URL leaves the site.
// No opener and no other site's reads either.
func SetFormHeaders(h http.Header, csp string) {
	SetHeaders(h, csp)
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Pragma", "no-cache")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// CrossOrigin says why a form's POST comes from another site, or "":
// browsers send Origin (and Sec-Fetch-Site) with every form POST. The
// page's origin is the scheme of the connection and the Host: "null" (an
// opaque origin, a sandboxed frame or a data: URL) and the same host
// under another scheme are other origins. A request without Origin (an
// old browser, a script) has the form's CSRF token to show.
func CrossOrigin(r *http.Request) string {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return "cross-site"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != scheme || !strings.EqualFold(u.Host, r.Host) {
		return "origin"
	}
	return ""
}

// WritePage executes t with data and answers it as an HTML page with
// status code, its length known. A template that fails writes nothing and
// returns the error, for the caller to log and answer 500.
func WritePage(w http.ResponseWriter, code int, t *template.Template, data any) error {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(code)
	w.Write(buf.Bytes())
	return nil
}
