package serve

import (
	"crypto"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"minica/ca"
	"minica/serve/internal/servetest"
	"minica/serve/ocsp"
)

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

var start = servetest.Start

// fixture is a CA directory with a CRL of lifetime one hour published at
// start (servetest.Fixture), and a Server over it.
type fixture struct {
	dir    string
	ca     *ca.CA
	signer crypto.Signer
	clock  *servetest.Clock
	timers *timers
	log    *servetest.Log
	srv    *Server
}

func newFixture(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	base := servetest.NewFixture(t)
	f := &fixture{dir: base.Dir, ca: base.CA, signer: base.Signer, clock: base.Clock, timers: newTimers(), log: base.Log}
	cfg := Config{CA: f.ca, Signer: f.signer, Now: f.clock.Now, NewTimer: f.timers.New, Log: f.log, LockTimeout: 50 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	var err error
	if f.srv, err = New(cfg); err != nil {
		t.Fatalf("New() error = %v", err)
	}
	return f
}

// base is f as a servetest.Fixture.
func (f *fixture) base() *servetest.Fixture {
	return &servetest.Fixture{Dir: f.dir, CA: f.ca, Signer: f.signer, Clock: f.clock, Log: f.log}
}

// other opens the CA directory a second time, as another process would.
func (f *fixture) other(t *testing.T) *ca.CA { t.Helper(); return f.base().Other(t) }

// publishElsewhere publishes a CRL through another handle, under the lock,
// as `minica crl` would.
func (f *fixture) publishElsewhere(t *testing.T) *ca.CRLInfo {
	t.Helper()
	return f.base().PublishElsewhere(t)
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

func (f *fixture) logText() string { return f.log.String() }

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func hasLine(text, line string) bool { return servetest.HasLine(text, line) }

func issue(t testing.TB, c *ca.CA, signer crypto.Signer, name string) *x509.Certificate {
	t.Helper()
	return servetest.Issue(t, c, signer, name)
}

func request(t testing.TB, cert, issuer *x509.Certificate, h crypto.Hash) []byte {
	t.Helper()
	return servetest.OCSPRequest(t, cert, issuer, h)
}

func newTestResponder(t testing.TB, cfg ocsp.Config) *ocsp.Responder {
	t.Helper()
	r, err := ocsp.New(cfg)
	if err != nil {
		t.Fatalf("ocsp.New() error = %v", err)
	}
	return r
}
