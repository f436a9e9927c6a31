package serve

import (
	"bytes"
	"crypto"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"minica/ca"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// timers is a Config.NewTimer whose timers fire only when the test says.
type timers struct {
	mu      sync.Mutex
	pending []fakeTimer
	made    chan time.Duration // each new timer's duration
}

type fakeTimer struct {
	d time.Duration
	c chan time.Time
}

func newTimers() *timers { return &timers{made: make(chan time.Duration, 16)} }

func (ts *timers) New(d time.Duration) (<-chan time.Time, func() bool) {
	c := make(chan time.Time, 1)
	ts.mu.Lock()
	ts.pending = append(ts.pending, fakeTimer{d, c})
	ts.mu.Unlock()
	ts.made <- d
	return c, func() bool { return true }
}

// fireAll fires every timer made so far.
func (ts *timers) fireAll() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, ft := range ts.pending {
		select {
		case ft.c <- time.Time{}:
		default:
		}
	}
	ts.pending = nil
}

// await waits for the next timer to be made and returns its duration.
func (ts *timers) await(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-ts.made:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("no timer made within 5s")
		return 0
	}
}

var start = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// fixture is a CA directory with a CRL of lifetime one hour published at
// start, and a Server over it.
type fixture struct {
	dir    string
	ca     *ca.CA
	signer crypto.Signer
	clock  *clock
	timers *timers
	log    *lockedWriter
	srv    *Server
}

func newFixture(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	f := &fixture{dir: filepath.Join(t.TempDir(), "ca"), clock: &clock{t: start}, timers: newTimers(), log: &lockedWriter{w: &bytes.Buffer{}}}
	settings := ca.DefaultSettings()
	settings.CRLLifetime = ca.Duration(time.Hour)
	settings.CRLURL = "http://pki.example.com/pki/root.crl"
	c, err := ca.Init(f.dir, ca.InitOptions{CommonName: "Test Root", Settings: settings, Now: f.clock.Now, FirstCRL: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Now = f.clock.Now
	f.ca = c
	if f.signer, err = c.LoadSigner(nil); err != nil {
		t.Fatal(err)
	}
	cfg := Config{CA: c, Signer: f.signer, Now: f.clock.Now, NewTimer: f.timers.New, Log: f.log, LockTimeout: 50 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	if f.srv, err = New(cfg); err != nil {
		t.Fatalf("New() error = %v", err)
	}
	return f
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// other opens the CA directory a second time, as another process would.
func (f *fixture) other(t *testing.T) *ca.CA {
	t.Helper()
	c, err := ca.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Now = f.clock.Now
	return c
}

// publishElsewhere publishes a CRL through another handle, under the lock,
// as `minica crl` would.
func (f *fixture) publishElsewhere(t *testing.T) *ca.CRLInfo {
	t.Helper()
	c := f.other(t)
	unlock, err := c.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	info, err := c.PublishCRL(f.signer, 0)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// get runs one request through the Server's handler.
func (f *fixture) do(t *testing.T, method, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(rec, req)
	return rec
}

func (f *fixture) metrics(t *testing.T) string {
	t.Helper()
	return f.do(t, http.MethodGet, "/metrics").Body.String()
}

func (f *fixture) logText() string {
	f.log.mu.Lock()
	defer f.log.mu.Unlock()
	return f.log.w.String()
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func hasLine(text, line string) bool {
	for l := range strings.SplitSeq(text, "\n") {
		if l == line {
			return true
		}
	}
	return false
}
