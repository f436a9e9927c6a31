package proxy

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"math/big"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"minica/crlsource"
	"minica/internal/crlserver"
	"minica/internal/testca"
	"minica/revoke"
)

// signCRL signs with revoke.Build a CRL of ca numbered number, current at
// now for an hour, listing entries: a delta CRL against the complete CRL
// numbered base when base is positive.
func signCRL(t *testing.T, ca *testca.CA, number, base int64, now time.Time, entries ...revoke.Entry) []byte {
	t.Helper()
	return signCRLUntil(t, ca, number, base, now, now.Add(time.Hour), entries...)
}

// signCRLUntil is signCRL with the nextUpdate next.
func signCRLUntil(t *testing.T, ca *testca.CA, number, base int64, now, next time.Time, entries ...revoke.Entry) []byte {
	t.Helper()
	p := revoke.Params{Issuer: ca.Cert, Signer: ca.Key, Number: big.NewInt(number),
		ThisUpdate: now.Add(-time.Minute), NextUpdate: next}
	if base > 0 {
		p.DeltaBase = big.NewInt(base)
	}
	der, err := revoke.Build(p, slices.Values(entries))
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// deltaSource is a followed crlsource.DeltaSource of a complete CRL and a
// delta beside it, which counts the reads of the complete CRL.
type deltaSource struct {
	mu              sync.Mutex
	complete, delta []byte
	reads           int
	sinks           chan crlsource.Sink
}

func (s *deltaSource) set(complete, delta []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.complete, s.delta = complete, delta
}

func (s *deltaSource) Current() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	return s.complete, nil
}

func (s *deltaSource) Sum() ([32]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sha256.Sum256(s.complete), nil
}

func (s *deltaSource) Delta() ([]byte, [32]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.delta, sha256.Sum256(s.complete)
}

func (s *deltaSource) Follow(ctx context.Context, sink crlsource.Sink) {
	s.sinks <- sink
	<-ctx.Done()
}

func (s *deltaSource) readCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// followDeltas starts a proxy trusting ca alone whose CRL source is src,
// with mod applied to its Config, and returns it and the sink it follows
// src with, a crlsource.DeltaSink.
func followDeltas(t *testing.T, ca *testca.CA, src *deltaSource, mod func(*Config)) (*env, crlsource.DeltaSink) {
	t.Helper()
	e := newEnv(t, func(c *Config) {
		c.CRL = src
		c.LoadCA = func() ([]*x509.Certificate, error) { return []*x509.Certificate{ca.Cert}, nil }
		if mod != nil {
			mod(c)
		}
	})
	select {
	case sink := <-src.sinks:
		ds, ok := sink.(crlsource.DeltaSink)
		if !ok {
			t.Fatalf("the sink is a %T; want a crlsource.DeltaSink", sink)
		}
		return e, ds
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not follow the CRL source within 10s")
	}
	return nil, nil
}

// admits reports whether the proxy lets a new connection of cert through.
func (e *env) admits(cert *x509.Certificate, key crypto.Signer) bool {
	resp, err := e.client(cert, key, false).Get(e.url("/"))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

// A proxy following a source that brings a complete CRL, then deltas,
// applies each delta to the complete CRL in use without reading or parsing
// that one again: a client revoked in the delta only is refused, one whose
// hold the delta lifts is admitted; a replayed delta, another CA's, or one
// against a later base is refused and the state kept; a complete CRL
// replaces the CRL and its delta.
func TestDeltaCRLs(t *testing.T) {
	ca := testca.New(t, "Delta CA")
	stranger := testca.New(t, "Other CA")
	now := time.Now()
	alice, aliceKey := ca.Client(t, "alice")
	bob, bobKey := ca.Client(t, "bob")
	revoked := func(c *x509.Certificate, r revoke.Reason) revoke.Entry {
		return revoke.Entry{Serial: c.SerialNumber, RevokedAt: now.Add(-time.Hour), Reason: r}
	}
	src := &deltaSource{sinks: make(chan crlsource.Sink, 1)}
	src.set(signCRL(t, ca, 1, 0, now, revoked(bob, revoke.CertificateHold)), nil)
	parses := 0
	e, sink := followDeltas(t, ca, src, func(c *Config) {
		c.parseCRLFile = func(data []byte, cas []*x509.Certificate) ([]revoke.IssuedCRL, error) {
			parses++
			return revoke.ParseCRLFile(data, cas)
		}
	})
	if sink.Base() != "1" {
		t.Fatalf("the sink's base is %q; want 1", sink.Base())
	}
	if !e.admits(alice, aliceKey) || e.admits(bob, bobKey) {
		t.Fatal("before the delta: want alice admitted, bob (on hold) refused")
	}
	state := func() (number, delta string) {
		crl := e.p.trust.Load().crl
		d := ""
		if c, ok := crl.(*revoke.CRL); ok && c.Delta() != nil {
			d = c.Delta().Number().String()
		}
		return crl.Number().String(), d
	}

	reads := src.readCount()
	src.set(src.complete, signCRL(t, ca, 2, 1, now, revoked(alice, revoke.KeyCompromise), revoked(bob, revoke.RemoveFromCRL)))
	if err := sink.Changed(); err != nil {
		t.Fatalf("Changed() with a delta = %v", err)
	}
	if n, d := state(); n != "2" || d != "2" || sink.Base() != "1" {
		t.Fatalf("after the delta: CRL %s, delta %s, base %s; want 2, 2 over the complete CRL 1", n, d, sink.Base())
	}
	if got := src.readCount(); got != reads || parses != 1 {
		t.Fatalf("applying a delta read the complete CRL %d times and parsed CRLs %d times; want neither", got-reads, parses-1)
	}
	if e.admits(alice, aliceKey) || !e.admits(bob, bobKey) {
		t.Fatal("after the delta: want alice (revoked in it) refused, bob (hold lifted) admitted")
	}
	if got := e.metric("minica_proxy_crl_number"); got != "minica_proxy_crl_number 2" {
		t.Errorf("metric = %q; want the delta's number", got)
	}
	src.set(src.complete, signCRL(t, ca, 3, 1, now, revoked(alice, revoke.KeyCompromise), revoked(bob, revoke.RemoveFromCRL)))
	if err := sink.Changed(); err != nil {
		t.Fatalf("Changed() with the next delta = %v", err)
	}

	refusals := []struct {
		name   string
		delta  []byte
		reason string
	}{
		{"replayed delta", signCRL(t, ca, 2, 1, now, revoked(bob, revoke.KeyCompromise)), revoke.RefusalOlder},
		{"another CA's delta", signCRL(t, stranger, 4, 1, now, revoked(bob, revoke.KeyCompromise)), revoke.RefusalWrongIssuer},
		{"delta against a later base", signCRL(t, ca, 5, 4, now, revoked(bob, revoke.KeyCompromise)), revoke.RefusalDelta},
		{"complete CRL as a delta", signCRL(t, ca, 6, 0, now), revoke.RefusalNotDelta},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			src.set(src.complete, tt.delta)
			var r *crlsource.Refusal
			if err := sink.Changed(); !errors.As(err, &r) || r.Reason != tt.reason {
				t.Fatalf("Changed() = %v; want a *crlsource.Refusal, %s", err, tt.reason)
			}
			if n, d := state(); n != "3" || d != "3" {
				t.Fatalf("CRL %s, delta %s; want 3, 3 kept", n, d)
			}
			if !e.admits(bob, bobKey) {
				t.Fatal("bob refused; want the state of delta 3 kept")
			}
		})
	}

	src.set(signCRL(t, ca, 7, 0, now, revoked(alice, revoke.KeyCompromise)), nil)
	if err := sink.Changed(); err != nil {
		t.Fatalf("Changed() with a complete CRL = %v", err)
	}
	if n, d := state(); n != "7" || d != "" || sink.Base() != "7" || e.p.trust.Load().crlDelta != [32]byte{} {
		t.Fatalf("after a complete CRL: CRL %s, delta %q, base %s; want 7 alone", n, d, sink.Base())
	}
	if e.admits(alice, aliceKey) || !e.admits(bob, bobKey) {
		t.Fatal("after the complete CRL: want alice refused, bob admitted")
	}
}

// serveDelta is a crlserver on 127.0.0.1 publishing st.
func serveDelta(t *testing.T, st crlserver.State) (*crlserver.Server, string) {
	srv := &crlserver.Server{}
	srv.Set(st)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return srv, hs.URL + "/crl.der"
}

// startFollower starts a crlsource.Follower of url caching in cache.
func startFollower(t *testing.T, url, cache string) *crlsource.Follower {
	f := &crlsource.Follower{HTTP: &crlsource.HTTP{URL: url}, Refresh: time.Hour, Wait: 30 * time.Second,
		MinBackoff: 10 * time.Millisecond, StartAttempts: 1, Cache: cache}
	if err := f.Start(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// waitNumber waits up to 10s for the CRL in use to be number over the
// complete CRL base.
func (e *env) waitNumber(number, base string) {
	e.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		t := e.p.trust.Load()
		if t.crl.Number().String() == number && t.completeNumber() == base {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("CRL in use %s over %s 10s on; want %s over %s\n%s", t.crl.Number(), t.completeNumber(), number, base, e.log.String())
		}
	}
}

// A delta against a later base than the complete CRL in use (a server
// that misjudged the proxy's base) is refused, and the Follower then asks
// without a base: the proxy gets the complete CRL, and the delta applies to
// that one.
func TestDeltaLaterBaseFetchesComplete(t *testing.T) {
	ca := testca.New(t, "Delta CA")
	now := time.Now()
	alice, aliceKey := ca.Client(t, "alice")
	srv, url := serveDelta(t, crlserver.State{Complete: signCRL(t, ca, 1, 0, now), Number: 1})
	f := startFollower(t, url, "")
	e := newEnv(t, func(c *Config) {
		c.CRL = f
		c.LoadCA = func() ([]*x509.Certificate, error) { return []*x509.Certificate{ca.Cert}, nil }
	})
	if !e.admits(alice, aliceKey) {
		t.Fatal("alice refused before her revocation")
	}
	time.Sleep(50 * time.Millisecond) // let the long poll reach the server
	delta := signCRL(t, ca, 4, 3, now, revoke.Entry{Serial: alice.SerialNumber, RevokedAt: now.Add(-time.Hour), Reason: revoke.KeyCompromise})
	// The server says the delta is against CRL 1.
	srv.Set(crlserver.State{Complete: signCRL(t, ca, 3, 0, now), Number: 3, Delta: delta, DeltaNumber: 4, DeltaBase: 1})
	e.waitNumber("4", "3")
	e.waitLog("crl-fetch-failed", "reason=delta-mismatch", "delta CRL")
	bases := srv.Bases()
	i := slices.Index(bases, "1")
	if i < 0 || !slices.Equal(bases[i:i+2], []string{"1", ""}) || !slices.Contains(bases[i+2:], "3") {
		t.Fatalf("bases sent = %q; want 1, then none after the refusal, then 3", bases)
	}
	if e.admits(alice, aliceKey) {
		t.Fatal("alice, revoked in the delta, admitted")
	}
}

// A restart from the cache, the URL down, comes back with the complete CRL
// and the delta of the cache files applied to it.
func TestDeltaCacheRestart(t *testing.T) {
	ca := testca.New(t, "Delta CA")
	now := time.Now()
	alice, aliceKey := ca.Client(t, "alice")
	cache := filepath.Join(t.TempDir(), "crl.cache")
	files := map[string][]byte{
		cache:            signCRL(t, ca, 1, 0, now),
		cache + ".delta": signCRL(t, ca, 2, 1, now, revoke.Entry{Serial: alice.SerialNumber, RevokedAt: now.Add(-time.Hour), Reason: revoke.KeyCompromise}),
	}
	for name, data := range files {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/crl.der"
	ln.Close()
	f := startFollower(t, down, cache)
	if !f.FromCache() {
		t.Fatal("Start() with the URL down did not take the cache")
	}
	e := newEnv(t, func(c *Config) {
		c.CRL = f
		c.LoadCA = func() ([]*x509.Certificate, error) { return []*x509.Certificate{ca.Cert}, nil }
	})
	e.waitNumber("2", "1")
	if bob, bobKey := ca.Client(t, "bob"); !e.admits(bob, bobKey) {
		t.Fatal("bob, never revoked, refused after the restart")
	}
	if e.admits(alice, aliceKey) {
		t.Fatal("alice, revoked in the cached delta, admitted after the restart")
	}
}
