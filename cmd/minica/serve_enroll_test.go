package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/smallstep/pkcs7"
)

// TestServeProcessEnroll runs serve --enroll as a process: a link made by
// 'minica enroll' gives a signed Apple profile over HTTPS, once; the plain
// HTTP listener does not answer it, and serve's log never holds the token.
func TestServeProcessEnroll(t *testing.T) {
	t.Parallel()
	dir := newCADir(t)
	mustMinica(t, dir, "issue", "server", "pki", "--dns", "localhost", "--ip", "127.0.0.1")
	p := startServe(t, dir, "--listen", "127.0.0.1:0", "--listen-tls", "127.0.0.1:0", "--server-cert", "pki", "--enroll")
	if len(p.bases) != 2 {
		t.Fatalf("listening on %q; want http and https", p.bases)
	}
	var link struct {
		ID, URL string
	}
	out := mustMinica(t, dir, "enroll", "alice", "--email", "alice@example.com", "--base-url", p.bases[1], "--json")
	if err := json.Unmarshal([]byte(out), &link); err != nil {
		t.Fatal(err)
	}
	token := link.URL[strings.LastIndexByte(link.URL, '/')+1:]

	// Plain HTTP: refused, the link untouched.
	p.client = &http.Client{Timeout: 10 * time.Second}
	if resp, _ := p.fetch(t, p.bases[0]+"/enroll/"+token); resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET over plain HTTP = %d; want 403", resp.StatusCode)
	}

	roots := x509.NewCertPool()
	roots.AddCert(caCert(t, dir))
	p.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, page := p.fetch(t, link.URL)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	if resp.StatusCode != 200 || m == nil || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET the link = %d, Cache-Control %q:\n%s", resp.StatusCode, resp.Header.Get("Cache-Control"), page)
	}
	form := url.Values{"csrf": {string(m[1])}, "action": {"download"}, "format": {"mobileconfig"},
		"password": {"a long bundle password"}, "password2": {"a long bundle password"}}
	resp, err := p.client.PostForm(link.URL, form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-apple-aspen-config" {
		t.Fatalf("POST download = %d %s:\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	p7, err := pkcs7.Parse(body)
	if err != nil {
		t.Fatalf("the profile is not signed CMS: %v", err)
	}
	if err := p7.VerifyWithChain(roots); err != nil || p7.GetOnlySigner().Subject.CommonName != "pki" {
		t.Errorf("profile signature: %v, signer %v; want verified, by serve's certificate pki", err, p7.GetOnlySigner().Subject)
	}
	if !strings.Contains(string(p7.Content), "com.apple.security.pkcs12") {
		t.Errorf("the profile holds no PKCS#12 payload")
	}

	resp, page = p.fetch(t, link.URL)
	if resp.StatusCode != 404 || !strings.Contains(string(page), "already used") {
		t.Errorf("the link again = %d; want 404 already used:\n%s", resp.StatusCode, page)
	}
	list := mustMinica(t, dir, "enroll", "--list", "--all")
	if !regexp.MustCompile(`(?m)^alice +` + link.ID + ` used .* from 127\.0\.0\.1, serial [0-9a-f]{32}$`).MatchString(list) {
		t.Errorf("enroll --list --all:\n%s", list)
	}
	if _, body := p.fetch(t, p.bases[0]+"/metrics"); !strings.Contains(string(body), "minica_serve_enroll_issued_total 1\n") {
		t.Errorf("metrics lack the issuance:\n%s", body)
	}
	p.waitLog(t, "enroll-issued id="+link.ID+" name=alice")
	if strings.Contains(p.stderr.String(), token) {
		t.Errorf("serve's log holds the token:\n%s", p.stderr)
	}
}
