package proxy

import (
	"crypto"
	"crypto/x509"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"minica/crlsource"
	"minica/internal/testca"
	"minica/revoke"
)

// deltaClient is a client certificate of a delta fault test.
type deltaClient struct {
	name string
	cert *x509.Certificate
	key  crypto.Signer
}

// Faults of the road between serve and a proxy, each a sequence of
// cumulative delta CRLs against the complete CRL 1 (bob on hold): delta 2
// revokes alice and lifts bob's hold; delta 3, cumulative, revokes carol
// too. A delta lost (3 alone) gives what 2 then 3 gives; a delta
// duplicated (the same bytes twice) is a no-op the second time, without
// an error or a parse; deltas reordered (3, then 2) keep the state of 3,
// 2 refused as older.
func TestDeltaFaults(t *testing.T) {
	ca := testca.New(t, "Delta CA")
	now := time.Now()
	clients := map[string]deltaClient{}
	for _, n := range []string{"alice", "bob", "carol", "dave"} {
		cert, key := ca.Client(t, n)
		clients[n] = deltaClient{n, cert, key}
	}
	entry := func(name string, r revoke.Reason) revoke.Entry {
		return revoke.Entry{Serial: clients[name].cert.SerialNumber, RevokedAt: now.Add(-time.Hour), Reason: r}
	}
	complete := signCRL(t, ca, 1, 0, now, entry("bob", revoke.CertificateHold))
	deltas := map[int64][]byte{
		2: signCRL(t, ca, 2, 1, now, entry("alice", revoke.KeyCompromise), entry("bob", revoke.RemoveFromCRL)),
		3: signCRL(t, ca, 3, 1, now, entry("alice", revoke.KeyCompromise), entry("bob", revoke.RemoveFromCRL),
			entry("carol", revoke.KeyCompromise)),
	}
	// Who each state lets through.
	admitted := map[string][]string{"2": {"bob", "carol", "dave"}, "3": {"bob", "dave"}}

	type step struct {
		delta  int64
		reason string // the refusal of this delta, "" for none
	}
	tests := []struct {
		name  string
		steps []step
		want  string // the number of the delta in use at the end
	}{
		{"in order", []step{{2, ""}, {3, ""}}, "3"},
		{"delta lost", []step{{3, ""}}, "3"},
		{"delta duplicated", []step{{2, ""}, {2, ""}}, "2"},
		{"last delta duplicated", []step{{2, ""}, {3, ""}, {3, ""}}, "3"},
		{"deltas reordered", []step{{3, ""}, {2, revoke.RefusalOlder}}, "3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &deltaSource{sinks: make(chan crlsource.Sink, 1)}
			src.set(complete, nil)
			parses, deltaParses := 0, 0
			e, sink := followDeltas(t, ca, src, func(c *Config) {
				c.parseCRLFile = func(data []byte, cas []*x509.Certificate) ([]revoke.IssuedCRL, error) {
					parses++
					return revoke.ParseCRLFile(data, cas)
				}
				c.parseDelta = func(data []byte, issuer *x509.Certificate) (*revoke.CRL, error) {
					deltaParses++
					return revoke.ParseDelta(data, issuer)
				}
			})
			for i, s := range tt.steps {
				src.set(complete, deltas[s.delta])
				before, parsedBefore := e.p.trust.Load(), deltaParses
				err := sink.Changed()
				var r *crlsource.Refusal
				switch {
				case s.reason == "" && err != nil:
					t.Fatalf("step %d: Changed() with delta %d = %v; want nil", i, s.delta, err)
				case s.reason != "" && (!errors.As(err, &r) || r.Reason != s.reason):
					t.Fatalf("step %d: Changed() with delta %d = %v; want a *crlsource.Refusal, %s", i, s.delta, err, s.reason)
				}
				if i > 0 && s == tt.steps[i-1] {
					if after := e.p.trust.Load(); after.gen != before.gen {
						t.Errorf("step %d: the same delta again made trust generation %d of %d; want none", i, after.gen, before.gen)
					}
					if deltaParses != parsedBefore {
						t.Errorf("step %d: the same delta again was parsed %d more times; want none", i, deltaParses-parsedBefore)
					}
				}
			}
			tr := e.p.trust.Load()
			if d := tr.crl.(*revoke.CRL).Delta(); d == nil || d.Number().String() != tt.want || sink.Base() != "1" {
				t.Fatalf("CRL in use %s over %s; want delta %s over the complete CRL 1", tr.crl.Number(), sink.Base(), tt.want)
			}
			if parses != 1 {
				t.Errorf("the complete CRL was parsed %d times; want once", parses)
			}
			for _, c := range clients {
				if want := slices.Contains(admitted[tt.want], c.name); e.admits(c.cert, c.key) != want {
					t.Errorf("%s admitted %v; want %v, as delta %s judges", c.name, !want, want, tt.want)
				}
			}
		})
	}
}

// A proxy holding a complete CRL with a delta applied fails closed past
// the earlier of their nextUpdates exactly as with a complete CRL alone:
// the same refusal reason, log line, metrics and health, whether the
// base or the delta lapses first; with CRLGrace, the combination gets the
// same grace.
func TestDeltaExpiry(t *testing.T) {
	tests := []struct {
		name              string
		baseFor, deltaFor time.Duration // 0: no delta
	}{
		{"complete CRL alone", time.Hour, 0},
		{"base lapses first", time.Hour, 3 * time.Hour},
		{"delta lapses first", 3 * time.Hour, time.Hour},
	}
	for _, grace := range []time.Duration{0, 2 * time.Hour} {
		for _, tt := range tests {
			t.Run(tt.name+" grace "+grace.String(), func(t *testing.T) {
				testDeltaExpiry(t, tt.baseFor, tt.deltaFor, grace)
			})
		}
	}
}

// testDeltaExpiry checks a proxy holding a complete CRL current for
// baseFor, and a delta current for deltaFor (none when 0), the clock moved
// past the earlier of the two, then past grace.
func testDeltaExpiry(t *testing.T, baseFor, deltaFor, grace time.Duration) {
	ca := testca.New(t, "Delta CA")
	alice, aliceKey := ca.Client(t, "alice")
	now := time.Now()
	src := &deltaSource{sinks: make(chan crlsource.Sink, 1)}
	src.set(signCRLUntil(t, ca, 1, 0, now, now.Add(baseFor)), nil)
	e, sink := followDeltas(t, ca, src, func(c *Config) { c.CRLGrace = grace })
	wantNumber := "1"
	if deltaFor > 0 {
		src.set(src.complete, signCRLUntil(t, ca, 2, 1, now, now.Add(deltaFor)))
		if err := sink.Changed(); err != nil {
			t.Fatalf("Changed() with a delta = %v", err)
		}
		wantNumber = "2"
	}
	if got := e.p.trust.Load().crl.Number().String(); got != wantNumber {
		t.Fatalf("CRL in use %s; want %s", got, wantNumber)
	}
	next := now.Add(time.Hour).UTC().Format(time.RFC3339)
	open := e.client(alice, aliceKey, false)
	if code, _ := e.get(open, "/", nil); code != 200 {
		t.Fatalf("before nextUpdate: status = %d; want 200", code)
	}

	e.advance(time.Hour + time.Minute + grace/2)
	if grace > 0 {
		if code, _ := e.get(e.client(alice, aliceKey, false), "/", nil); code != 200 {
			t.Errorf("within grace: status = %d; want 200", code)
		}
		e.waitLog("crl-grace-warning", "next_update="+next)
		checkHealth(t, e, 200, "ok: warning: CRL expired at "+next+", accepted during the grace period")
		e.advance(grace)
	}
	if _, err := e.client(alice, aliceKey, false).Get(e.url("/")); err == nil {
		t.Error("new connection past nextUpdate succeeded; want refused")
	}
	e.waitLog("handshake-refused", "reason=crl-expired")
	e.waitLog("crl-expired-error", "next_update="+next)
	if code, _ := e.get(open, "/", nil); code != http.StatusServiceUnavailable {
		t.Errorf("open connection: status = %d; want 503", code)
	}
	checkHealth(t, e, 503, "unavailable: CRL expired at "+next+"\n")
	e.waitMetric(`minica_proxy_handshake_failures_total{reason="crl-expired"}`, "1")
	left := -(time.Minute + grace/2 + grace).Seconds()
	if got, want := e.metric("minica_proxy_crl_next_update_seconds"), "minica_proxy_crl_next_update_seconds "; len(got) <= len(want) ||
		!nearSeconds(got[len(want):], left) {
		t.Errorf("metric %q; want %s%.0f", got, want, left)
	}
	if got := e.metric("minica_proxy_crl_number"); got != "minica_proxy_crl_number "+wantNumber {
		t.Errorf("metric %q; want the number %s kept", got, wantNumber)
	}
}

// nearSeconds reports whether the metric value v is within 5 s of want.
func nearSeconds(v string, want float64) bool {
	f, err := strconv.ParseFloat(v, 64)
	return err == nil && f > want-5 && f < want+5
}
