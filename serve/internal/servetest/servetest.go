// Package servetest holds what the tests of serve and of its handler
// packages (ocsp, renew, enroll) share: a clock the test sets, a CA
// directory on that clock with a CRL published, and a log to read back.
// Only tests import it.
package servetest

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"

	"minica/ca"
)

// Start is the time of every fixture's clock when it is made.
var Start = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// Clock is a clock that tests set by hand. It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// Log is a log writer whose text a test reads back. It is safe for
// concurrent use.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Fixture is a root CA "Test Root" in a directory of the test's, on a
// Clock at Start, with a CRL of lifetime one hour published at Start and
// the CRL URL http://pki.example.com/pki/root.crl.
type Fixture struct {
	Dir    string
	CA     *ca.CA
	Signer crypto.Signer
	Clock  *Clock
	Log    *Log
	// engines are the store engines the CA may use (none: the files).
	engines []ca.Engine
}

// NewFixture makes a Fixture; its CA handles are closed when the test ends.
func NewFixture(t testing.TB) *Fixture {
	t.Helper()
	return NewFixtureOn(t, "", nil)
}

// NewFixtureOn makes a Fixture whose CA keeps its store at the URL store
// of one of engines ("" for the CA directory's files).
func NewFixtureOn(t testing.TB, store string, engines []ca.Engine) *Fixture {
	t.Helper()
	f := &Fixture{Dir: filepath.Join(t.TempDir(), "ca"), Clock: NewClock(Start), Log: &Log{}, engines: engines}
	settings := ca.DefaultSettings()
	settings.CRLLifetime = ca.Duration(time.Hour)
	settings.CRLURL = "http://pki.example.com/pki/root.crl"
	c, err := ca.Init(f.Dir, ca.InitOptions{CommonName: "Test Root", Settings: settings, Now: f.Clock.Now, FirstCRL: true,
		Store: store, Engines: engines})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Now = f.Clock.Now
	f.CA = c
	if f.Signer, err = c.LoadSigner(nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// Other opens the CA directory a second time, as another process (or a
// handler with a handle of its own) would.
func (f *Fixture) Other(t testing.TB) *ca.CA {
	t.Helper()
	c, err := ca.OpenWith(f.Dir, ca.OpenOptions{Engines: f.engines})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Now = f.Clock.Now
	return c
}

// PublishElsewhere publishes a CRL through another handle, under the lock,
// as `minica crl` would.
func (f *Fixture) PublishElsewhere(t testing.TB) *ca.CRLInfo {
	t.Helper()
	c := f.Other(t)
	unlock, err := c.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	info, err := c.PublishCRL(f.Signer, 0)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// HasLine reports whether text holds line as a whole line.
func HasLine(text, line string) bool {
	for l := range strings.SplitSeq(text, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// Issue issues a client certificate name with signer, the key of c.
func Issue(t testing.TB, c *ca.CA, signer crypto.Signer, name string) *x509.Certificate {
	t.Helper()
	is, err := c.Issue(signer, ca.Request{Name: name, Profile: ca.Client})
	if err != nil {
		t.Fatal(err)
	}
	return is.Cert
}

// OCSPRequest is the DER of an OCSP request about cert, issued by issuer,
// with the hash h and no nonce.
func OCSPRequest(t testing.TB, cert, issuer *x509.Certificate, h crypto.Hash) []byte {
	t.Helper()
	der, err := ocsp.CreateRequest(cert, issuer, &ocsp.RequestOptions{Hash: h})
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// PostOCSP posts the OCSP request der to /ocsp through h.
func PostOCSP(t testing.TB, h http.Handler, der []byte) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/ocsp", bytes.NewReader(der)))
	return rec
}

// ParseOCSP checks that rec is an OCSP response (200,
// application/ocsp-response) about cert, signed for issuer, and parses it.
func ParseOCSP(t testing.TB, rec *httptest.ResponseRecorder, cert, issuer *x509.Certificate) *ocsp.Response {
	t.Helper()
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/ocsp-response" {
		t.Fatalf("HTTP %d, Content-Type %q; want 200 application/ocsp-response", rec.Code, rec.Header().Get("Content-Type"))
	}
	resp, err := ocsp.ParseResponseForCert(rec.Body.Bytes(), cert, issuer)
	if err != nil {
		t.Fatalf("ParseResponseForCert() error = %v", err)
	}
	return resp
}
