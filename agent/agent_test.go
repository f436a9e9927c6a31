package agent

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"minica/formats"
	"minica/internal/testca"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// timers records the waits asked for; each fires at once after moving the
// clock by its duration, unless hold is set (then it never fires).
type timers struct {
	c     *clock
	mu    sync.Mutex
	waits []time.Duration
	hold  bool
	made  chan time.Duration
}

func (ts *timers) New(d time.Duration) (<-chan time.Time, func() bool) {
	ts.mu.Lock()
	ts.waits = append(ts.waits, d)
	hold := ts.hold
	ts.mu.Unlock()
	ch := make(chan time.Time, 1)
	if ts.made != nil {
		ts.made <- d
	}
	if !hold {
		ts.c.Set(ts.c.Now().Add(d))
		ch <- ts.c.Now()
	}
	return ch, func() bool { return true }
}

func (ts *timers) Waits() []time.Duration {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]time.Duration(nil), ts.waits...)
}

// fakeServe stands in for serve's POST /renew: it signs the CSR with ca
// for the lifetime of the client certificate, or answers as answer says.
type fakeServe struct {
	t      testing.TB
	srv    *httptest.Server
	ca     *testca.CA
	clock  *clock
	calls  atomic.Int32
	answer func(n int, w http.ResponseWriter) bool // true: answered
	// wrongKey signs a fresh key instead of the CSR's.
	wrongKey bool
	// boot is what POST /bootstrap saw (bootstrap_test.go).
	boot bootstrapSeen
}

func newFakeServe(t *testing.T, c *clock) *fakeServe {
	t.Helper()
	f := &fakeServe{t: t, ca: testca.New(t, "Agent Test CA"), clock: c}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serveHTTP))
	cert, key := f.ca.Server(t, "localhost")
	f.srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key}},
		ClientAuth: tls.RequestClientCert}
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServe) serveHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(f.calls.Add(1))
	if r.URL.Path == BootstrapPath && r.Method == http.MethodPost {
		f.serveBootstrap(n, w, r)
		return
	}
	if r.URL.Path != RenewPath || r.Method != http.MethodPost || r.Header.Get("Content-Type") != CSRType || len(r.TLS.PeerCertificates) == 0 {
		http.Error(w, "bad request", 400)
		return
	}
	if f.answer != nil && f.answer(n, w) {
		return
	}
	body, _ := io.ReadAll(r.Body)
	csr, err := x509.ParseCertificateRequest(body)
	if err != nil || csr.CheckSignature() != nil {
		http.Error(w, "bad csr", 400)
		return
	}
	old := r.TLS.PeerCertificates[0]
	pub := csr.PublicKey
	if f.wrongKey {
		pub = testca.NewKey(f.t).Public()
	}
	now := f.clock.Now()
	tmpl := &x509.Certificate{SerialNumber: testca.RandomSerial(f.t), RawSubject: csr.RawSubject, EmailAddresses: csr.EmailAddresses, DNSNames: csr.DNSNames,
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(old.NotAfter.Sub(old.NotBefore) - time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, f.ca.Cert, pub, f.ca.Key)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	w.Header().Set("Content-Type", ChainType)
	pem.Encode(w, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	w.Write(f.ca.PEM())
}

func problem(w http.ResponseWriter, status int, reason string) {
	w.Header().Set("Content-Type", ProblemType)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"status": status, "reason": reason, "detail": "because"})
}

// setup writes a client certificate of the fake CA valid from t0-30m to
// t0+30m, with its key, and returns the agent's config.
func setup(t *testing.T, f *fakeServe, c *clock, ts *timers) Config {
	t.Helper()
	dir := t.TempDir()
	t0 := c.Now()
	cert, key := f.ca.Leaf(t, &x509.Certificate{RawSubject: nil, NotBefore: t0.Add(-30 * time.Minute), NotAfter: t0.Add(30 * time.Minute),
		EmailAddresses: []string{"svc@example.com"}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	cfg := Config{URL: f.srv.URL, CertFile: filepath.Join(dir, "svc.crt"), KeyFile: filepath.Join(dir, "svc.key"),
		ChainFile: filepath.Join(dir, "chain.pem"), RenewAt: DefaultRenewAt, Now: c.Now, NewTimer: ts.New, Jitter: func() float64 { return 0.5 },
		Log: &bytes.Buffer{}}
	cfg.Roots = x509.NewCertPool()
	cfg.Roots.AddCert(f.ca.Cert)
	writePEM(t, cfg.CertFile, "CERTIFICATE", cert.Raw, 0o640)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	writePEM(t, cfg.KeyFile, "PRIVATE KEY", der, 0o600)
	return cfg
}

func writePEM(t *testing.T, file, typ string, der []byte, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), perm); err != nil {
		t.Fatal(err)
	}
	os.Chmod(file, perm)
}

func readCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := formats.ParseCertificates(data)
	if err != nil || len(certs) == 0 {
		t.Fatalf("%s: %v", file, err)
	}
	return certs[0]
}

func newAgent(t *testing.T, cfg Config) *Agent {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestDueAt(t *testing.T) {
	nb := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	cert := &x509.Certificate{NotBefore: nb, NotAfter: nb.Add(90 * 24 * time.Hour)}
	tests := []struct {
		renewAt float64
		want    time.Time
	}{
		{0, nb},
		{0.5, nb.Add(45 * 24 * time.Hour)},
		{DefaultRenewAt, nb.Add(time.Duration(0.66 * float64(90*24*time.Hour)))},
		{0.99, nb.Add(time.Duration(0.99 * float64(90*24*time.Hour)))},
	}
	for _, tt := range tests {
		if got := DueAt(cert, tt.renewAt); !got.Equal(tt.want) {
			t.Errorf("DueAt(90d, %v) = %s; want %s", tt.renewAt, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		name          string
		attempt       int
		left          time.Duration
		jitter        float64
		wantLo, wantH time.Duration
	}{
		{"first", 1, 24 * time.Hour, 0, 2500 * time.Millisecond, 2500 * time.Millisecond},
		{"first, most jitter", 1, 24 * time.Hour, 1, 5 * time.Second, 5 * time.Second},
		{"third", 3, 24 * time.Hour, 0.5, 15 * time.Second, 15 * time.Second},
		{"capped at max", 30, 24 * time.Hour, 1, 5 * time.Minute, 5 * time.Minute},
		{"a quarter of what is left", 30, 8 * time.Minute, 1, 2 * time.Minute, 2 * time.Minute},
		{"never under a second", 5, time.Second, 0, 500 * time.Millisecond, 500 * time.Millisecond},
		{"jitter out of range", 1, time.Hour, 7, 5 * time.Second, 5 * time.Second},
	}
	for _, tt := range tests {
		got := Backoff(tt.attempt, DefaultRetryMin, DefaultRetryMax, tt.left, tt.jitter)
		if got < tt.wantLo || got > tt.wantH {
			t.Errorf("%s: Backoff(%d, left %s, jitter %v) = %s; want %s to %s", tt.name, tt.attempt, tt.left, tt.jitter, got, tt.wantLo, tt.wantH)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		line    string
		want    []string
		wantErr string
	}{
		{line: "systemctl reload app", want: []string{"systemctl", "reload", "app"}},
		{line: `  nginx  -s   reload `, want: []string{"nginx", "-s", "reload"}},
		{line: `/opt/my\ app/reload 'a b' "c \"d\"" e'f'g`, want: []string{"/opt/my app/reload", "a b", `c "d"`, "efg"}},
		{line: `echo ''`, want: []string{"echo", ""}},
		{line: "", wantErr: "the command is empty"},
		{line: "kill -HUP $(cat /run/app.pid)", wantErr: `'$' is shell syntax`},
		{line: "reload; rm -rf /", wantErr: `';' is shell syntax`},
		{line: "a | b", wantErr: `'|' is shell syntax`},
		{line: `echo "$HOME"`, wantErr: `'$' inside double quotes`},
		{line: "echo 'open", wantErr: "unterminated ' quote"},
		{line: `echo "open`, wantErr: `unterminated " quote`},
		{line: `echo \`, wantErr: "a trailing backslash escapes nothing"},
		{line: `echo '$HOME;|'`, want: []string{"echo", "$HOME;|"}},
	}
	for _, tt := range tests {
		got, err := SplitCommand(tt.line)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("SplitCommand(%q) error = %v; want %q", tt.line, err, tt.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(got, "\x00") != strings.Join(tt.want, "\x00") {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", tt.line, got, err, tt.want)
		}
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	ok := Config{URL: "https://pki:8443", Roots: x509.NewCertPool(), CertFile: "c", KeyFile: "k", RenewAt: 0.5}
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string
	}{
		{"http", func(c *Config) { c.URL = "http://pki:8080" }, `the renewal URL "http://pki:8080" is not https`},
		{"no host", func(c *Config) { c.URL = "https:///renew" }, `is not https://HOST:PORT`},
		{"user", func(c *Config) { c.URL = "https://u:p@pki" }, `is not https://HOST:PORT`},
		{"no roots", func(c *Config) { c.Roots = nil }, "no CA to verify serve with"},
		{"no key", func(c *Config) { c.KeyFile = "" }, "the certificate and key files are required"},
		{"fraction", func(c *Config) { c.RenewAt = 1 }, "the renewal fraction 1 is not from 0 to below 1"},
		{"negative", func(c *Config) { c.RenewAt = -0.1 }, "the renewal fraction -0.1 is not from 0 to below 1"},
		{"empty exec", func(c *Config) { c.Exec = []string{} }, "the command to run after a renewal is empty"},
	}
	for _, tt := range tests {
		c := ok
		tt.mod(&c)
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: New() error = %v; want %q", tt.name, err, tt.wantErr)
		}
	}
	a, err := New(Config{URL: "https://pki.example.com:8443/ca/", Roots: x509.NewCertPool(), CertFile: "c", KeyFile: "k"})
	if err != nil || a.url != "https://pki.example.com:8443/ca/renew" {
		t.Errorf("New() url = %q, %v", a.url, err)
	}
}

// Before its due time a --once run renews nothing and asks nothing.
func TestRunOnceNotDue(t *testing.T) {
	c := &clock{t: time.Now().Truncate(time.Second)}
	f := newFakeServe(t, c)
	cfg := setup(t, f, c, &timers{c: c})
	cfg.Once = true
	before, _ := os.ReadFile(cfg.CertFile)
	if err := newAgent(t, cfg).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(cfg.CertFile)
	if f.calls.Load() != 0 || !bytes.Equal(before, after) {
		t.Errorf("%d requests and changed=%v before the due time; want none", f.calls.Load(), !bytes.Equal(before, after))
	}
	if log := cfg.Log.(*bytes.Buffer).String(); !strings.Contains(log, " agent-waiting serial=") || !strings.Contains(log, "days_left=0.02 left=30m0s") {
		t.Errorf("log = %q; want a waiting line with the days left", log)
	}
}

// A due certificate is renewed: a new key of the same type, the files
// replaced with their modes, the chain written, the command run.
func TestRunOnceRenews(t *testing.T) {
	c := &clock{t: time.Now().Truncate(time.Second)}
	f := newFakeServe(t, c)
	cfg := setup(t, f, c, &timers{c: c})
	cfg.Once, cfg.RenewAt = true, 0
	marker := filepath.Join(t.TempDir(), "ran")
	cfg.Exec = []string{"cp", cfg.CertFile, marker}
	old := readCert(t, cfg.CertFile)
	if err := newAgent(t, cfg).Run(context.Background()); err != nil {
		t.Fatalf("Run() = %v\n%s", err, cfg.Log)
	}
	cert := readCert(t, cfg.CertFile)
	key, err := formats.ParsePrivateKeyPEM(mustRead(t, cfg.KeyFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Equal(old) || formats.KeyMatchesCertificate(key, cert) != nil {
		t.Fatalf("after Run the certificate is the old one (%v) or does not match the key", cert.Equal(old))
	}
	if formats.KeyType(key.Public()) != formats.KeyType(old.PublicKey) || key.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(old.PublicKey) {
		t.Errorf("new key %s; want a new key of type %s", formats.KeyType(key.Public()), formats.KeyType(old.PublicKey))
	}
	for file, want := range map[string]os.FileMode{cfg.CertFile: 0o640, cfg.KeyFile: 0o600, cfg.ChainFile: 0o644} {
		if info, err := os.Stat(file); err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v); want %v", file, info.Mode().Perm(), err, want)
		}
	}
	if !readCert(t, cfg.ChainFile).Equal(f.ca.Cert) {
		t.Error("the chain file does not hold the CA")
	}
	if !bytes.Equal(mustRead(t, marker), mustRead(t, cfg.CertFile)) {
		t.Error("--exec did not run after the new files were in place")
	}
	if _, err := os.Stat(cfg.KeyFile + pendingSuffix); !os.IsNotExist(err) {
		t.Errorf("pending key left: %v", err)
	}
	if log := cfg.Log.(*bytes.Buffer).String(); !strings.Contains(log, " agent-renewed serial=") || !strings.Contains(log, " agent-exec command=cp") {
		t.Errorf("log = %q", log)
	}
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The daemon sleeps until the due time on one timer, renews then, and
// sleeps until the successor is due: no other wakeup.
func TestRunWakesOnlyWhenDue(t *testing.T) {
	c := &clock{t: time.Now().Truncate(time.Second)}
	f := newFakeServe(t, c)
	ts := &timers{c: c, hold: true, made: make(chan time.Duration, 8)}
	cfg := setup(t, f, c, ts)
	a := newAgent(t, cfg)
	old := readCert(t, cfg.CertFile)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// The first wait fires (the clock moves to the due time); the second,
	// for the successor, is held.
	ts.hold = false
	go func() { done <- a.Run(ctx) }()
	first := <-ts.made
	ts.mu.Lock()
	ts.hold = true
	ts.mu.Unlock()
	second := <-ts.made
	if want := DueAt(old, DefaultRenewAt).Sub(old.NotBefore) - 30*time.Minute; first != want {
		t.Errorf("first wait %s; want until the due time, %s", first, want)
	}
	cur := readCert(t, cfg.CertFile)
	if want := DueAt(cur, DefaultRenewAt).Sub(c.Now()); second != want {
		t.Errorf("second wait %s; want until the successor is due, %s", second, want)
	}
	if f.calls.Load() != 1 || a.Wakeups() != 1 {
		t.Errorf("%d requests and %d wakeups; want 1 and 1", f.calls.Load(), a.Wakeups())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() after cancel = %v; want nil", err)
	}
}

// Failures are retried with growing waits until serve answers.
func TestRunRetries(t *testing.T) {
	c := &clock{t: time.Now().Truncate(time.Second)}
	f := newFakeServe(t, c)
	f.answer = func(n int, w http.ResponseWriter) bool {
		switch n {
		case 1:
			problem(w, 503, "busy")
		case 2:
			http.Error(w, "bad gateway", http.StatusBadGateway)
		case 3:
			problem(w, 429, "rate-limited")
		default:
			return false
		}
		return true
	}
	ts := &timers{c: c}
	cfg := setup(t, f, c, ts)
	cfg.Once, cfg.RenewAt = true, 0.1
	if err := newAgent(t, cfg).Run(context.Background()); err != nil {
		t.Fatalf("Run() = %v\n%s", err, cfg.Log)
	}
	waits := ts.Waits()
	want := []time.Duration{3750 * time.Millisecond, 7500 * time.Millisecond, 15 * time.Second}
	if len(waits) != 3 || waits[0] != want[0] || waits[1] != want[1] || waits[2] != want[2] {
		t.Errorf("waits %v; want %v", waits, want)
	}
	if n := strings.Count(cfg.Log.(*bytes.Buffer).String(), "agent-renew-failed"); n != 3 {
		t.Errorf("%d renew-failed lines; want 3", n)
	}
	cfg2 := setup(t, f, c, &timers{c: c})
	cfg2.Once, cfg2.RenewAt, cfg2.Attempts = true, 0, 2
	f.calls.Store(0)
	f.answer = func(int, http.ResponseWriter) bool { panic(http.ErrAbortHandler) }
	err := newAgent(t, cfg2).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "renewing after 2 attempts") {
		t.Errorf("Run() with serve failing = %v; want the attempts named", err)
	}
}

// Refusals no retry mends end Run at once; nothing is written.
func TestRunRefused(t *testing.T) {
	tests := []struct {
		name    string
		answer  func(int, http.ResponseWriter) bool
		wrong   bool
		wantErr string
	}{
		{name: "revoked", answer: func(_ int, w http.ResponseWriter) bool { problem(w, 403, "revoked"); return true },
			wantErr: "serve refused the renewal: 403 revoked: because"},
		{name: "identity", answer: func(_ int, w http.ResponseWriter) bool { problem(w, 403, "identity-mismatch"); return true },
			wantErr: "serve refused the renewal: 403 identity-mismatch: because"},
		{name: "no renewal there", answer: func(_ int, w http.ResponseWriter) bool { http.Error(w, "not found", 404); return true },
			wantErr: "serve refused the renewal: 404 Not Found: not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t: time.Now().Truncate(time.Second)}
			f := newFakeServe(t, c)
			f.answer = tt.answer
			cfg := setup(t, f, c, &timers{c: c})
			cfg.RenewAt = 0.1 // the daemon: it must stop, not retry
			before := mustRead(t, cfg.CertFile)
			err := newAgent(t, cfg).Run(context.Background())
			var ref *Refusal
			if !errors.As(err, &ref) || err.Error() != tt.wantErr {
				t.Fatalf("Run() = %v; want %q", err, tt.wantErr)
			}
			if f.calls.Load() != 1 || !bytes.Equal(before, mustRead(t, cfg.CertFile)) {
				t.Errorf("%d requests, certificate changed %v; want 1, unchanged", f.calls.Load(), !bytes.Equal(before, mustRead(t, cfg.CertFile)))
			}
			if _, err := os.Stat(cfg.KeyFile + pendingSuffix); !os.IsNotExist(err) {
				t.Errorf("pending key left: %v", err)
			}
		})
	}
}

// A certificate serve signed for another key is never installed.
func TestRunRefusesWrongAnswer(t *testing.T) {
	c := &clock{t: time.Now().Truncate(time.Second)}
	f := newFakeServe(t, c)
	f.wrongKey = true
	cfg := setup(t, f, c, &timers{c: c})
	cfg.Once, cfg.RenewAt, cfg.Attempts = true, 0, 1
	before := mustRead(t, cfg.CertFile)
	err := newAgent(t, cfg).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "it is not for the new key") {
		t.Fatalf("Run() = %v; want a refusal of the answer", err)
	}
	if !bytes.Equal(before, mustRead(t, cfg.CertFile)) {
		t.Error("the certificate was replaced")
	}
}

// An expired certificate ends Run without a request.
func TestRunExpired(t *testing.T) {
	c := &clock{t: time.Now().Truncate(time.Second)}
	f := newFakeServe(t, c)
	cfg := setup(t, f, c, &timers{c: c})
	c.Set(c.Now().Add(31 * time.Minute))
	err := newAgent(t, cfg).Run(context.Background())
	var exp *ExpiredError
	if !errors.As(err, &exp) || !strings.Contains(err.Error(), "it can no longer renew itself") || f.calls.Load() != 0 {
		t.Errorf("Run() = %v after %d requests; want an ExpiredError and none", err, f.calls.Load())
	}
}

// A run stopped after the certificate was written and before the key
// leaves KEY.next, which the next start moves into place; a KEY.next that
// matches nothing is removed.
func TestLoadRecoversPendingKey(t *testing.T) {
	c := &clock{t: time.Now().Truncate(time.Second)}
	f := newFakeServe(t, c)
	cfg := setup(t, f, c, &timers{c: c})
	a := newAgent(t, cfg)
	newCert, newKey := f.ca.Client(t, "svc")
	writePEM(t, cfg.CertFile, "CERTIFICATE", newCert.Raw, 0o640)
	der, _ := x509.MarshalPKCS8PrivateKey(newKey)
	writePEM(t, cfg.KeyFile+pendingSuffix, "PRIVATE KEY", der, 0o600)
	cur, err := a.load()
	if err != nil {
		t.Fatalf("load() = %v", err)
	}
	if formats.KeyMatchesCertificate(cur.key, newCert) != nil {
		t.Error("the pending key was not installed")
	}
	if _, err := os.Stat(cfg.KeyFile + pendingSuffix); !os.IsNotExist(err) {
		t.Errorf("pending key still there: %v", err)
	}
	_, stale := f.ca.Client(t, "other")
	der, _ = x509.MarshalPKCS8PrivateKey(stale)
	writePEM(t, cfg.KeyFile+pendingSuffix, "PRIVATE KEY", der, 0o600)
	if _, err := a.load(); err != nil {
		t.Fatalf("load() with a stale pending key = %v", err)
	}
	if _, err := os.Stat(cfg.KeyFile + pendingSuffix); !os.IsNotExist(err) {
		t.Errorf("stale pending key still there: %v", err)
	}
}
