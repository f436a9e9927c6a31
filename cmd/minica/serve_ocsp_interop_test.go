//go:build interop

package main

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/formats"
)

// `openssl ocsp` against a running `minica serve`, at the URL without a
// path (as the command has it) and at the CA's OCSP URL path: good
// for a valid certificate, revoked soon after `minica revoke` in another
// process, unknown for a certificate the CA key signed outside minica. The
// responder certificate serve issued is recorded in the database. The same
// on the dedicated OCSP listener (--listen-ocsp), counted in the metrics of
// the main one.
func TestServeProcessOCSP(t *testing.T) {
	t.Parallel()
	for _, dedicated := range []bool{false, true} {
		name := "main"
		if dedicated {
			name = "listen-ocsp"
		}
		t.Run(name, func(t *testing.T) { testServeProcessOCSP(t, dedicated) })
	}
}

func testServeProcessOCSP(t *testing.T, dedicated bool) {
	openssl := needTool(t, "openssl", "openssl")
	dir := newCADir(t)
	mustMinica(t, dir, "ocsp", "url", "http://pki.example.com/status")
	mustMinica(t, dir, "issue", "client", "simon", "--email", "simon@example.com")
	simon := certFileOf(t, dir, "simon")
	stranger := strangerCert(t, dir)
	caFile := filepath.Join(dir, "ca.crt")
	var p *serveProc
	base := ""
	if dedicated {
		p = startServe(t, dir, "--listen-ocsp", "127.0.0.1:0")
		base = p.ocsp
	} else {
		p = startServe(t, dir)
		base = p.base
	}

	ask := func(cert, url string) string {
		t.Helper()
		out, err := exec.Command(openssl, "ocsp", "-issuer", caFile, "-cert", cert, "-url", url, "-CAfile", caFile, "-timeout", "10").CombinedOutput()
		if err != nil {
			t.Fatalf("openssl ocsp -url %s: %v\n%s\nserve stderr: %s", url, err, out, p.stderr)
		}
		return string(out)
	}
	status := func(out string) string {
		if !strings.Contains(out, "Response verify OK") || strings.Contains(out, "WARNING") {
			return "unverified: " + out
		}
		for _, s := range []string{"good", "revoked", "unknown"} {
			if strings.Contains(out, ": "+s+"\n") {
				return s
			}
		}
		return "no status: " + out
	}
	for _, url := range []string{base, base + "/status", base + "/ocsp"} {
		if got := status(ask(simon, url)); got != "good" {
			t.Errorf("simon at %s: %s; want good", url, got)
		}
	}
	if got := status(ask(stranger, base)); got != "unknown" {
		t.Errorf("a certificate minica never issued: %s; want unknown", got)
	}

	mustMinica(t, dir, "revoke", "simon", "--reason", "keyCompromise")
	revoked := time.Now()
	var out string
	eventually(t, "simon revoked over OCSP", func() string {
		out = ask(simon, base)
		if s := status(out); s != "revoked" {
			return s
		}
		return ""
	})
	t.Logf("OCSP said revoked %s after revoke returned", time.Since(revoked).Round(time.Millisecond))
	if !strings.Contains(out, "Reason: keyCompromise") {
		t.Errorf("revoked response lacks the reason:\n%s", out)
	}

	_, metrics := p.fetch(t, "/metrics")
	for _, want := range []string{`minica_serve_ocsp_responses_total{status="good"} 3`, `minica_serve_ocsp_responses_total{status="unknown"} 1`} {
		if !strings.Contains(string(metrics), want+"\n") {
			t.Errorf("metrics lack %s:\n%s", want, metrics)
		}
	}
	list := mustMinica(t, dir, "list", "--json")
	if !strings.Contains(list, `"name":"minica-ocsp"`) || !strings.Contains(list, `"profile":"ocsp"`) {
		t.Errorf("minica list lacks the responder certificate:\n%s", list)
	}
}

// certFileOf returns the certificate file of the only certificate of name.
func certFileOf(t *testing.T, dir, name string) string {
	t.Helper()
	m := serialCerts(filepath.Join(dir, "certs", name, "*.crt"))
	if len(m) != 1 {
		t.Fatalf("finding the certificate of %s: %v", name, m)
	}
	return m[0]
}

// strangerCert signs a leaf with the CA key by hand, unrecorded, and
// returns its file.
func strangerCert(t *testing.T, dir string) string {
	t.Helper()
	key, err := formats.ParsePrivateKeyPEM(readTestFile(t, filepath.Join(dir, "ca.key")), nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(0x5eed), Subject: pkix.Name{CommonName: "stranger"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(nil, tmpl, caCert(t, dir), key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "stranger.crt")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}
