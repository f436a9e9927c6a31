package serve

import (
	"crypto"
	"strings"
	"testing"
	"time"

	"minica/ca"
	"minica/revoke"
	"minica/serve/internal/servetest"
	"minica/serve/ocsp"

	xocsp "golang.org/x/crypto/ocsp"
)

// revokeElsewhere issues a certificate and revokes it through another
// handle, under the lock, publishing the CRL only when publish is set: as
// `minica revoke` does, or `minica revoke --no-crl` (or a revoke whose
// publishing failed) when not.
func (f *fixture) revokeElsewhere(t *testing.T, name string, publish bool) string {
	t.Helper()
	return f.issueElsewhere(t, name, true, publish).Record.Serial
}

// issueElsewhere issues a certificate through another handle, revoking it
// when revoked is set and then publishing the CRL when publish is.
func (f *fixture) issueElsewhere(t *testing.T, name string, revoked, publish bool) *ca.Issued {
	t.Helper()
	c := f.other(t)
	unlock, err := c.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	is, err := c.Issue(f.signer, ca.Request{Name: name, Profile: ca.Client})
	if err != nil {
		t.Fatal(err)
	}
	if revoked {
		if _, err := c.Revoke(is.Cert.SerialNumber, revoke.KeyCompromise); err != nil {
			t.Fatal(err)
		}
	}
	if publish {
		if _, err := c.PublishCRL(f.signer, 0); err != nil {
			t.Fatal(err)
		}
	}
	return is
}

func (f *fixture) advance(d time.Duration) { f.clock.Set(f.clock.Now().Add(d)) }

// A revocation in the revocation log that the CRL lacks is published by
// serve a poll after it sees the log change, not at the next half-life; the
// OCSP responder is told at once. A revocation published by the revoking
// process is not published twice.
func TestPublishesUnpublished(t *testing.T) {
	changes := 0
	f := newFixture(t, func(c *Config) { c.OnCRLChange = func() { changes++ } })
	f.srv.check()
	first := f.srv.CRL().Number()
	if changes != 0 || strings.Contains(f.logText(), "crl-unpublished") {
		t.Fatalf("a CA with nothing unpublished: %d changes, log:\n%s", changes, f.logText())
	}

	serial := f.revokeElsewhere(t, "alice", false)
	f.srv.check()
	if changes != 1 || f.srv.CRL().Number().Cmp(first) != 0 {
		t.Fatalf("the round that saw the revocation: %d changes, CRL %s; want 1 (for OCSP), CRL %s kept", changes, f.srv.CRL().Number(), first)
	}
	f.advance(DefaultPollInterval)
	f.srv.check()
	crl := f.srv.CRL()
	if crl.Number().Cmp(first) <= 0 {
		t.Fatalf("a round later: CRL %s; want one above %s", crl.Number(), first)
	}
	if missing, err := f.ca.Unpublished(crl); err != nil || len(missing) != 0 {
		t.Errorf("served CRL lacks %v (%v); want %s on it", missing, err, serial)
	}
	if !strings.Contains(f.logText(), "crl-unpublished revocations=1 first="+serial+" action=publishing") {
		t.Errorf("log lacks the unpublished revocation:\n%s", f.logText())
	}
	if !hasLine(f.metrics(t), "minica_serve_crl_resigns_total 1") {
		t.Errorf("metrics lack one publication:\n%s", f.metrics(t))
	}
	published := crl.Number()
	f.advance(DefaultPollInterval)
	f.srv.check()
	if got := f.srv.CRL().Number(); got.Cmp(published) != 0 {
		t.Errorf("a round with nothing new: CRL %s; want %s kept", got, published)
	}

	// `minica revoke` publishes its own CRL: serve loads it and signs none.
	f.revokeElsewhere(t, "bob", true)
	f.srv.check()
	f.advance(DefaultPollInterval)
	f.srv.check()
	if missing, err := f.ca.Unpublished(f.srv.CRL()); err != nil || len(missing) != 0 || !hasLine(f.metrics(t), "minica_serve_crl_resigns_total 1") {
		t.Errorf("after a revoke that published: missing %v (%v), metrics:\n%s", missing, err, f.metrics(t))
	}
}

// Without the CA key serve cannot publish: it logs the unpublished
// revocations once, serves the CRL it has, and still tells OCSP.
func TestUnpublishedWithoutKey(t *testing.T) {
	changes := 0
	f := newFixture(t, func(c *Config) { c.Signer = nil; c.OnCRLChange = func() { changes++ } })
	f.srv.check()
	first := f.srv.CRL().Number()
	serial := f.revokeElsewhere(t, "alice", false)
	for range 3 {
		f.srv.check()
		f.advance(DefaultPollInterval)
	}
	if got := f.srv.CRL().Number(); got.Cmp(first) != 0 || changes != 1 {
		t.Errorf("CRL %s, %d changes; want %s kept, 1 change", got, changes, first)
	}
	want := "crl-unpublished revocations=1 first=" + serial + " reason="
	if n := strings.Count(f.logText(), want); n != 1 || !strings.Contains(f.logText(), "--no-sign") {
		t.Errorf("log has %q %d times; want once, naming --no-sign:\n%s", want, n, f.logText())
	}
}

// Wired as serve wires it, the OCSP responder answers revoked in the round
// in which serve sees the revocation: a CRL published by `minica revoke`, or
// a revocation left unpublished (then serve publishes it a round later).
func TestOCSPFollowsRevocations(t *testing.T) {
	var responder *ocsp.Responder
	f := newFixture(t, func(c *Config) {
		c.OnCRLChange = func() { responder.CRLChanged() }
	})
	rc, err := ca.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	rc.Now = f.clock.Now
	responder = newTestResponder(t, ocsp.Config{CA: rc, Signer: f.signer})
	f.srv.cfg.OCSP = responder
	f.srv.check()
	for _, publish := range []bool{true, false} {
		is := f.issueElsewhere(t, "alice", false, false)
		der := request(t, is.Cert, f.ca.Cert, crypto.SHA1)
		status := func() *xocsp.Response {
			t.Helper()
			return servetest.ParseOCSP(t, servetest.PostOCSP(t, f.srv.Handler(), der), is.Cert, f.ca.Cert)
		}
		if got := status(); got.Status != xocsp.Good {
			t.Fatalf("publish %v: before the revocation: status %d; want good", publish, got.Status)
		}
		c := f.other(t)
		unlock, err := c.Lock(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Revoke(is.Cert.SerialNumber, revoke.KeyCompromise); err != nil {
			t.Fatal(err)
		}
		if publish {
			if _, err := c.PublishCRL(f.signer, 0); err != nil {
				t.Fatal(err)
			}
		}
		unlock()
		if got := status(); got.Status != xocsp.Good {
			t.Fatalf("publish %v: before serve's round: status %d; want the cached good", publish, got.Status)
		}
		f.advance(time.Second)
		f.srv.check()
		if got := status(); got.Status != xocsp.Revoked {
			t.Errorf("publish %v: the round after the revocation: status %d; want revoked", publish, got.Status)
		}
	}
}

// While another process holds the CA lock (a revoke still publishing), serve
// neither reads the log nor publishes; it does once the lock is free.
func TestUnpublishedWaitsForTheLock(t *testing.T) {
	f := newFixture(t, nil)
	f.srv.check()
	first := f.srv.CRL().Number()
	f.revokeElsewhere(t, "alice", false)
	unlock, err := f.other(t).Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		f.srv.check()
		f.advance(DefaultPollInterval)
	}
	if got := f.srv.CRL().Number(); got.Cmp(first) != 0 || strings.Contains(f.logText(), "crl-unpublished") {
		t.Fatalf("with the lock held elsewhere: CRL %s, log:\n%s; want %s kept, nothing done", got, f.logText(), first)
	}
	unlock()
	f.srv.check()
	if missing, err := f.ca.Unpublished(f.srv.CRL()); err != nil || len(missing) != 0 || f.srv.CRL().Number().Cmp(first) <= 0 {
		t.Errorf("once the lock is free: CRL %s, missing %v (%v); want a new CRL with every revocation", f.srv.CRL().Number(), missing, err)
	}
}
