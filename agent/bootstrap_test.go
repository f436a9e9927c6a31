package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"minica/formats"
	"minica/internal/testca"
)

// testToken is the bootstrap token the fake serve takes.
const testToken = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

// bootstrapSeen is what the fake serve saw of the bootstrap requests.
type bootstrapSeen struct {
	mu         sync.Mutex
	used       bool
	keys       [][]byte // the CSRs' public keys, DER
	clientCert bool     // a request presented a client certificate
}

func (f *fakeServe) bootstrapSeen() *bootstrapSeen { return &f.boot }

// serveBootstrap stands in for serve's POST /bootstrap: testToken, once,
// for a server certificate of web1.example.com valid an hour.
func (f *fakeServe) serveBootstrap(n int, w http.ResponseWriter, r *http.Request) {
	st := f.bootstrapSeen()
	body, _ := io.ReadAll(r.Body)
	csr, err := x509.ParseCertificateRequest(body)
	if err != nil || csr.CheckSignature() != nil || r.Header.Get("Content-Type") != CSRType {
		problem(w, http.StatusBadRequest, "bad-csr")
		return
	}
	pub, _ := x509.MarshalPKIXPublicKey(csr.PublicKey)
	st.mu.Lock()
	st.keys = append(st.keys, pub)
	st.clientCert = st.clientCert || len(r.TLS.PeerCertificates) > 0
	st.mu.Unlock()
	if f.answer != nil && f.answer(n, w) {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case r.Header.Get("Authorization") != "Bearer "+testToken:
		problem(w, http.StatusForbidden, "unknown-token")
		return
	case st.used:
		problem(w, http.StatusForbidden, "token-used")
		return
	}
	st.used = true
	now := f.clock.Now()
	tmpl := &x509.Certificate{SerialNumber: testca.RandomSerial(f.t), DNSNames: []string{"web1.example.com"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, f.ca.Cert, csr.PublicKey, f.ca.Key)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	w.Header().Set("Content-Type", ChainType)
	pem.Encode(w, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	w.Write(f.ca.PEM())
}

// setupBootstrap returns an agent config with a token file and no
// certificate yet.
func setupBootstrap(t *testing.T, f *fakeServe, c *clock, ts *timers, token string) Config {
	t.Helper()
	dir := t.TempDir()
	cfg := Config{URL: f.srv.URL, CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"),
		ChainFile: filepath.Join(dir, "chain.pem"), TokenFile: filepath.Join(dir, "web1.token"), RenewAt: DefaultRenewAt,
		Now: c.Now, NewTimer: ts.New, Jitter: func() float64 { return 0.5 }, Log: &bytes.Buffer{}, Once: true}
	cfg.Roots = x509.NewCertPool()
	cfg.Roots.AddCert(f.ca.Cert)
	if err := os.WriteFile(cfg.TokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestBootstrapGetsTheFirstCertificate(t *testing.T) {
	c := &clock{t: time.Now()}
	ts := &timers{c: c}
	f := newFakeServe(t, c)
	cfg := setupBootstrap(t, f, c, ts, testToken)
	if err := newAgent(t, cfg).Run(context.Background()); err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	cert := readCert(t, cfg.CertFile)
	keyPEM, err := os.ReadFile(cfg.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	key, err := formats.ParsePrivateKeyPEM(keyPEM, nil)
	if err != nil || formats.KeyMatchesCertificate(key, cert) != nil {
		t.Fatalf("the key file does not match the certificate: %v", err)
	}
	if info, _ := os.Stat(cfg.KeyFile); info.Mode().Perm() != 0o600 {
		t.Errorf("key mode %04o; want 0600", info.Mode().Perm())
	}
	if chain := readCert(t, cfg.ChainFile); !chain.Equal(f.ca.Cert) {
		t.Error("the chain file does not hold the CA")
	}
	if _, err := os.Stat(cfg.KeyFile + pendingSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind: %v", cfg.KeyFile+pendingSuffix, err)
	}
	if st := f.bootstrapSeen(); st.clientCert || len(st.keys) != 1 {
		t.Errorf("requests: %d, client certificate presented %v; want 1 without", len(st.keys), st.clientCert)
	}
	log := cfg.Log.(*bytes.Buffer).String()
	if !strings.Contains(log, "agent-bootstrapped") || strings.Contains(log, testToken) {
		t.Errorf("log %q: want agent-bootstrapped and never the token", log)
	}
	// Then the certificate renews over mTLS as any other.
	c.Set(cert.NotAfter.Add(-10 * time.Minute))
	if err := newAgent(t, cfg).Run(context.Background()); err != nil {
		t.Fatalf("Run() for the renewal error = %v", err)
	}
	if next := readCert(t, cfg.CertFile); next.Equal(cert) {
		t.Error("the bootstrapped certificate was not renewed")
	}
	if log := cfg.Log.(*bytes.Buffer).String(); !strings.Contains(log, "agent-bootstrap-skipped") {
		t.Errorf("log %q: want agent-bootstrap-skipped once the certificate exists", log)
	}
}

func TestBootstrapRefused(t *testing.T) {
	c := &clock{t: time.Now()}
	ts := &timers{c: c}
	f := newFakeServe(t, c)
	cfg := setupBootstrap(t, f, c, ts, strings.Repeat("B", 43))
	err := newAgent(t, cfg).Run(context.Background())
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Reason != "unknown-token" || !strings.Contains(err.Error(), "serve refused the bootstrap token: 403 unknown-token") {
		t.Fatalf("Run() error = %v; want the refusal of the token", err)
	}
	for _, file := range []string{cfg.CertFile, cfg.KeyFile, cfg.KeyFile + pendingSuffix, cfg.ChainFile} {
		if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a refusal: %v", file, err)
		}
	}
	if f.calls.Load() != 1 {
		t.Errorf("%d requests; a permanent refusal is not retried", f.calls.Load())
	}
}

// busyFirst answers the first request 503 busy, and leaves the rest to
// the fake serve.
func busyFirst(n int, w http.ResponseWriter) bool {
	if n == 1 {
		problem(w, http.StatusServiceUnavailable, "busy")
		return true
	}
	return false
}

func TestBootstrapRetriesWithTheSameKey(t *testing.T) {
	c := &clock{t: time.Now()}
	ts := &timers{c: c}
	f := newFakeServe(t, c)
	f.answer = busyFirst
	cfg := setupBootstrap(t, f, c, ts, testToken)
	if err := newAgent(t, cfg).Run(context.Background()); err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	st := f.bootstrapSeen()
	if len(st.keys) != 2 || !bytes.Equal(st.keys[0], st.keys[1]) {
		t.Errorf("%d requests; want 2 for the same key", len(st.keys))
	}
	if len(ts.Waits()) != 1 {
		t.Errorf("waits %v; want one between the tries", ts.Waits())
	}
}

func TestBootstrapSkippedWhenTheCertificateExists(t *testing.T) {
	c := &clock{t: time.Now()}
	ts := &timers{c: c}
	f := newFakeServe(t, c)
	cfg := setup(t, f, c, ts)
	cfg.Once = true
	cfg.TokenFile = filepath.Join(t.TempDir(), "gone.token") // never read
	if err := newAgent(t, cfg).Run(context.Background()); err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if f.calls.Load() != 0 {
		t.Errorf("%d requests; want none (the certificate is not due)", f.calls.Load())
	}
}

func TestReadTokenRefusesWhatIsNotAToken(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty":     "\n",
		"two words": "abc def\n",
		"too large": strings.Repeat("A", maxTokenFile+1),
	} {
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		os.WriteFile(file, []byte(content), 0o600)
		if _, err := readToken(file); err == nil || !strings.Contains(err.Error(), file) {
			t.Errorf("%s: readToken() error = %v; want one naming the file", name, err)
		}
	}
	if _, err := readToken(filepath.Join(dir, "missing")); err == nil {
		t.Error("readToken(a missing file) = nil error")
	}
	file := filepath.Join(dir, "good")
	os.WriteFile(file, []byte("  "+testToken+"\r\n"), 0o600)
	if got, err := readToken(file); err != nil || got != testToken {
		t.Errorf("readToken() = %q, %v; want the token", got, err)
	}
}

func TestBootstrapAfterALostAnswerReusesThePendingKey(t *testing.T) {
	c := &clock{t: time.Now()}
	ts := &timers{c: c}
	f := newFakeServe(t, c)
	// The first try fails and this run gives up: its key stays for the
	// next run (as after an answer lost to a timeout).
	f.answer = busyFirst
	cfg := setupBootstrap(t, f, c, ts, testToken)
	cfg.Attempts = 1
	if err := newAgent(t, cfg).Run(context.Background()); err == nil {
		t.Fatal("Run() = nil; want the failure of its one attempt")
	}
	if _, err := os.Stat(cfg.KeyFile + pendingSuffix); err != nil {
		t.Fatalf("the pending key is gone after a transient failure: %v", err)
	}
	// The next run asks with the same key.
	if err := newAgent(t, cfg).Run(context.Background()); err != nil {
		t.Fatalf("second Run() error = %v", err)
	}
	st := f.bootstrapSeen()
	if len(st.keys) != 2 || !bytes.Equal(st.keys[0], st.keys[1]) {
		t.Errorf("%d requests; want 2 for the same key", len(st.keys))
	}
	if !strings.Contains(cfg.Log.(*bytes.Buffer).String(), "agent-bootstrap-key-reused") {
		t.Error("the log does not say the pending key was reused")
	}
}

// The agent cannot write its key (its directory is missing): it says so
// and stops before it sends anything, so the token is not spent.
func TestBootstrapUnwritableKeyStopsBeforeTheRequest(t *testing.T) {
	c := &clock{t: time.Now()}
	ts := &timers{c: c}
	f := newFakeServe(t, c)
	cfg := setupBootstrap(t, f, c, ts, testToken)
	cfg.KeyFile = filepath.Join(t.TempDir(), "missing", "tls.key")
	err := newAgent(t, cfg).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "tls.key") {
		t.Fatalf("Run() error = %v; want one naming the key file", err)
	}
	if f.calls.Load() != 0 {
		t.Errorf("%d requests; want none before the key is safe", f.calls.Load())
	}
	if _, err := os.Stat(cfg.CertFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a certificate file exists: %v", err)
	}
}
