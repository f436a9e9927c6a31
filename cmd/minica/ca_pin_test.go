package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// certSum is the SHA-256 fingerprint of the PEM certificate in file, as
// sha256sum prints it.
func certSum(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatalf("no PEM in %s", file)
	}
	s := sha256.Sum256(b.Bytes)
	return hex.EncodeToString(s[:])
}

// --ca-fingerprint pins the CA certificate that proxy, agent and crl fetch
// read from --ca (a ca.pem downloaded from serve): the right one works, and
// another fails closed, naming both fingerprints, before anything is used.
func TestCAFingerprintPins(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	caFile := filepath.Join(f.dir, "ca.crt")
	other := newCADir(t)
	otherFile := filepath.Join(other, "ca.crt")
	pin, otherPin := certSum(t, caFile), certSum(t, otherFile)
	// The message names both as inspect prints them.
	pinColons, otherColons := colonsOf(pin), colonsOf(otherPin)
	crl, err := os.ReadFile(filepath.Join(f.dir, "crl.der"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(crl) }))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "crl.der")
	mismatch := func(t *testing.T, stderr string, code int) {
		t.Helper()
		if code != 1 || !strings.Contains(stderr, "the CA certificate is not the one pinned") ||
			!strings.Contains(stderr, otherColons) || !strings.Contains(stderr, pinColons) {
			t.Fatalf("exit %d, stderr %q; want 1 and an error naming %s and the pin %s", code, stderr, otherColons, pinColons)
		}
	}

	t.Run("crl fetch", func(t *testing.T) {
		_, stderr, code := minica(t, f.dir, "crl", "fetch", srv.URL+"/crl.der", "--out", out, "--ca", otherFile, "--ca-fingerprint", pin)
		mismatch(t, stderr, code)
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("--out after a refused pin: %v; want no file", err)
		}
		// inspect's (and openssl's) spelling of the same fingerprint.
		if stdout := mustMinica(t, f.dir, "crl", "fetch", srv.URL+"/crl.der", "--out", out, "--ca", caFile, "--ca-fingerprint", pinColons); !strings.HasPrefix(stdout, "updated ") {
			t.Fatalf("crl fetch with the right pin printed %q; want updated", stdout)
		}
	})
	t.Run("agent", func(t *testing.T) {
		_, stderr, code := minica(t, f.dir, "agent", "--once", "--url", "https://127.0.0.1:1", "--ca", otherFile, "--ca-fingerprint", pin,
			"--cert", f.file(t, "alice", ".crt"), "--key", f.file(t, "alice", ".key"))
		mismatch(t, stderr, code)
	})
	t.Run("bad fingerprint", func(t *testing.T) {
		_, stderr, code := minica(t, f.dir, "crl", "fetch", srv.URL+"/crl.der", "--out", out, "--ca", caFile, "--ca-fingerprint", "abc")
		if code != 2 || !strings.Contains(stderr, `--ca-fingerprint "abc": want the SHA-256 fingerprint of the CA certificate: 64 hex digits`) {
			t.Fatalf("exit %d, stderr %q; want a usage error", code, stderr)
		}
	})
	t.Run("proxy", func(t *testing.T) {
		_, stderr, code := minica(t, f.dir, "proxy", "--listen", "127.0.0.1:0", "--upstream", f.upstream.URL, "--server-cert", "app",
			"--ca", otherFile, "--ca-fingerprint", pin)
		mismatch(t, stderr, code)
		// Pinned, the proxy starts; a ca.crt changed under it later is a
		// failed reload that keeps the pinned CA.
		bundle := filepath.Join(t.TempDir(), "ca.pem")
		copyFile(t, caFile, bundle, 0o644)
		p := f.startProxy(t, "--ca", bundle, "--ca-fingerprint", pin, "--reload-interval", "0")
		copyFile(t, otherFile, bundle, 0o644)
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		p.waitLog(t, "reload-failed", "file=ca", "the CA certificate is not the one pinned", otherColons)
		if status, _, body, _, err := get(f.client(t, "alice"), "https://"+p.addr+"/"); err != nil || status != 200 {
			t.Fatalf("GET as alice after the refused reload: %d %q %v; want 200", status, body, err)
		}
	})
}

// colonsOf spells a hex fingerprint as inspect and openssl do.
func colonsOf(h string) string {
	out := strings.ToUpper(h[:2])
	for i := 2; i < len(h); i += 2 {
		out += ":" + strings.ToUpper(h[i:i+2])
	}
	return out
}
