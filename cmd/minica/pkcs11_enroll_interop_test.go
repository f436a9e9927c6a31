//go:build interop

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"minica/formats"
	"minica/internal/softhsm"
)

// TestServeEnrollWithTokenKey runs `minica serve --enroll` on a CA whose
// key is in a SoftHSM2 token: a link's certificate is signed through the
// token, with the signer serve loads for everything else.
func TestServeEnrollWithTokenKey(t *testing.T) {
	tok, err := softhsm.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOFTHSM2_CONF", tok.Conf)
	t.Setenv("MINICA_PIN", softhsm.PIN)
	dir := filepath.Join(t.TempDir(), "ca")
	mustMinica(t, dir, "init", "--cn", "Token Root", "--key-uri", tok.URI("enroll"))
	var link struct{ ID, URL string }
	if err := json.Unmarshal([]byte(mustMinica(t, dir, "enroll", "alice", "--email", "alice@example.com", "--base-url", "https://pki.example.com", "--json")), &link); err != nil {
		t.Fatal(err)
	}
	token := link.URL[strings.LastIndexByte(link.URL, '/')+1:]
	p := startServe(t, dir, "--enroll", "--enroll-http")
	p.client = &http.Client{Timeout: 30 * time.Second}
	resp, page := p.fetch(t, "/enroll/"+token)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	if resp.StatusCode != 200 || m == nil {
		t.Fatalf("GET the link = %d:\n%s\nserve stderr: %s", resp.StatusCode, page, p.stderr)
	}
	const pw = "a long bundle password"
	resp, err = p.client.PostForm(p.base+"/enroll/"+token, url.Values{"csrf": {string(m[1])}, "action": {"download"}, "format": {"p12"}, "password": {pw}, "password2": {pw}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST download = %d:\n%s\nserve stderr: %s", resp.StatusCode, body, p.stderr)
	}
	_, leaf, _, err := formats.DecodeP12(body, pw)
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.CheckSignatureFrom(caCert(t, dir)); err != nil || leaf.Subject.CommonName != "alice" {
		t.Errorf("the enrolled certificate %v is not signed by the token's CA key: %v", leaf.Subject, err)
	}
	p.waitLog(t, "enroll-issued id="+link.ID+" name=alice")
}
