package serve

import (
	"bytes"
	"context"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"minica/ca"
	"minica/crlsource"
	"minica/revoke"
)

// newDeltaFixture is a fixture whose CA signs a delta CRL for every
// revocation (ca.DeltaSettings From -1), serving a complete CRL published
// since and the empty delta CRL signed after it.
func newDeltaFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, func(c *Config) { enableDeltas(t, c.CA) })
	f.publishElsewhere(t)
	f.srv.check()
	if f.srv.cur.Load().delta.Load().body == nil {
		t.Fatalf("no delta CRL served after a complete CRL; log:\n%s", f.logText())
	}
	return f
}

// enableDeltas makes c sign delta CRLs at once.
func enableDeltas(t *testing.T, c *ca.CA) {
	t.Helper()
	unlock, err := c.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if err := c.SetDeltaSettings(ca.DeltaSettings{From: -1}); err != nil {
		t.Fatal(err)
	}
}

// revokeDelta issues a certificate name and revokes it through
// another handle, under the lock, publishing the revocation as `minica
// revoke` does (a delta CRL, with deltas on); it returns the serial.
func (f *fixture) revokeDelta(t *testing.T, name string) *big.Int {
	t.Helper()
	c := f.other(t)
	cert := issue(t, c, f.signer, name)
	unlock, err := c.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	rec, err := c.Record(cert.SerialNumber)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.RevokeRecord(rec, revoke.KeyCompromise)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PublishRevocations(f.signer, res.ChangedRecords()); err != nil {
		t.Fatal(err)
	}
	return cert.SerialNumber
}

// parseDelta checks that rec is a 200 with a delta CRL of f's CA, DER,
// whose ETag is crlsource's tag of it, and parses it.
func (f *fixture) parseDelta(t *testing.T, rec *httptest.ResponseRecorder) *revoke.CRL {
	t.Helper()
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/pkix-crl" {
		t.Fatalf("= %d %q, Content-Type %q; want 200 application/pkix-crl", rec.Code, rec.Body, rec.Header().Get("Content-Type"))
	}
	if got, want := rec.Header().Get("ETag"), crlsource.Tag(rec.Body.Bytes()); got != want {
		t.Errorf("ETag %s; want %s", got, want)
	}
	d, err := revoke.ParseDelta(rec.Body.Bytes(), f.ca.Cert)
	if err != nil {
		t.Fatalf("ParseDelta() error = %v", err)
	}
	return d
}

// Before any delta CRL /crl-delta.der is 404; once the CA signs deltas, a
// complete CRL is followed by an empty delta against it, served there.
func TestDeltaPath(t *testing.T) {
	f := newFixture(t, func(c *Config) { enableDeltas(t, c.CA) })
	for _, p := range []string{"/crl-delta.der", "/crl-delta.pem"} {
		if rec := f.do(t, "GET", p); rec.Code != 404 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
			t.Fatalf("GET %s without a delta = %d %q; want 404 plain text", p, rec.Code, rec.Header().Get("Content-Type"))
		}
	}
	if body := f.do(t, "GET", "/healthz").Body.String(); !hasLine(body, "delta-crl-number: none") {
		t.Errorf("/healthz without a delta:\n%s", body)
	}
	info := f.publishElsewhere(t)
	f.srv.check()
	d := f.parseDelta(t, f.do(t, "GET", "/crl-delta.der"))
	if d.DeltaBase().Cmp(info.Number) != 0 || d.Len() != 0 {
		t.Fatalf("delta CRL %s: base %s, %d entries; want base %s, empty", d.Number(), d.DeltaBase(), d.Len(), info.Number)
	}
	if !strings.Contains(f.logText(), "crl-delta-loaded number="+d.Number().String()) {
		t.Errorf("log lacks crl-delta-loaded:\n%s", f.logText())
	}
}

// After a revocation /crl-delta.der is the delta CRL that lists it, which
// a client naming the complete CRL it holds in Minica-CRL-Base gets at
// /crl.der too, when the delta applies to that base: every other client
// gets the complete CRL, as before.
func TestDeltaNegotiation(t *testing.T) {
	f := newDeltaFixture(t)
	complete := f.do(t, "GET", "/crl.der")
	base := f.completeNumber()
	serial := f.revokeDelta(t, "alice")
	f.srv.check()

	d := f.parseDelta(t, f.do(t, "GET", "/crl-delta.der"))
	if d.DeltaBase().Cmp(base) != 0 || d.Number().Cmp(base) <= 0 || !d.IsRevoked(serial) {
		t.Fatalf("delta CRL %s, base %s, lists alice %t; want base %s, a higher number, alice listed", d.Number(), d.DeltaBase(), d.IsRevoked(serial), base)
	}
	deltaDER := f.do(t, "GET", "/crl-delta.der").Body.Bytes()
	if got := f.srv.CRL(); got.Number().Cmp(d.Number()) != 0 || !got.IsRevoked(serial) {
		t.Errorf("CRL() = number %s, alice revoked %t; want the delta applied", got.Number(), got.IsRevoked(serial))
	}
	pemRec := f.do(t, "GET", "/crl-delta.pem")
	if want := pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: deltaDER}); pemRec.Code != 200 || !bytes.Equal(pemRec.Body.Bytes(), want) {
		t.Errorf("GET /crl-delta.pem = %d; want 200 and the PEM of /crl-delta.der", pemRec.Code)
	}
	if head := f.do(t, "HEAD", "/crl-delta.der"); head.Code != 200 || head.Body.Len() != 0 || head.Header().Get("ETag") != crlsource.Tag(deltaDER) {
		t.Errorf("HEAD /crl-delta.der = %d, %d bytes, ETag %q", head.Code, head.Body.Len(), head.Header().Get("ETag"))
	}

	baseText := base.String()
	tests := []struct {
		name   string
		header []string
		delta  bool
	}{
		{"the base itself", []string{hdrCRLBase, baseText}, true},
		{"spaces around", []string{hdrCRLBase, " " + baseText + " "}, true},
		{"lower case name", []string{"minica-crl-base", baseText}, true},
		{"no header", nil, false},
		{"too old", []string{hdrCRLBase, new(big.Int).Sub(base, big.NewInt(1)).String()}, false},
		{"the delta's own number", []string{hdrCRLBase, d.Number().String()}, false},
		{"too new", []string{hdrCRLBase, new(big.Int).Add(d.Number(), big.NewInt(1)).String()}, false},
		{"garbage", []string{hdrCRLBase, "abc"}, false},
		{"negative", []string{hdrCRLBase, "-" + baseText}, false},
		{"plus sign", []string{hdrCRLBase, "+" + baseText}, false},
		{"hex", []string{hdrCRLBase, "0x" + base.Text(16)}, false},
		{"empty", []string{hdrCRLBase, ""}, false},
		{"two numbers", []string{hdrCRLBase, baseText + ", " + baseText}, false},
		{"two headers", []string{hdrCRLBase, baseText, hdrCRLBase, baseText}, false},
		{"too long", []string{hdrCRLBase, strings.Repeat("0", 49) + baseText}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := f.do(t, "GET", "/crl.der", tt.header...)
			if !strings.Contains(rec.Header().Get("Vary"), hdrCRLBase) {
				t.Errorf("Vary %q; want %s", rec.Header().Get("Vary"), hdrCRLBase)
			}
			if !tt.delta {
				if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), complete.Body.Bytes()) || rec.Header().Get(hdrDeltaCRL) != "" ||
					rec.Header().Get("ETag") != complete.Header().Get("ETag") {
					t.Fatalf("= %d, %d bytes, %s %q; want 200 with the complete CRL, no %s", rec.Code, rec.Body.Len(), hdrDeltaCRL,
						rec.Header().Get(hdrDeltaCRL), hdrDeltaCRL)
				}
				return
			}
			got := f.parseDelta(t, rec)
			if got.Number().Cmp(d.Number()) != 0 || rec.Header().Get(hdrDeltaCRL) != "base="+baseText {
				t.Fatalf("delta %s, %s %q; want delta %s, base=%s", got.Number(), hdrDeltaCRL, rec.Header().Get(hdrDeltaCRL), d.Number(), baseText)
			}
		})
	}

	t.Run("304 when If-None-Match names the delta", func(t *testing.T) {
		rec := f.do(t, "GET", "/crl.der", hdrCRLBase, baseText, "If-None-Match", crlsource.Tag(deltaDER))
		if rec.Code != 304 || rec.Header().Get("ETag") != crlsource.Tag(deltaDER) || rec.Body.Len() != 0 {
			t.Fatalf("= %d, ETag %q; want 304 naming the delta", rec.Code, rec.Header().Get("ETag"))
		}
		if rec := f.do(t, "GET", "/crl-delta.der", "If-None-Match", crlsource.Tag(deltaDER)); rec.Code != 304 {
			t.Fatalf("/crl-delta.der = %d; want 304", rec.Code)
		}
		// Without the base, the delta's tag is not the answer's.
		if rec := f.do(t, "GET", "/crl.der", "If-None-Match", crlsource.Tag(deltaDER)); rec.Code != 200 || rec.Header().Get(hdrDeltaCRL) != "" {
			t.Fatalf("without %s = %d %q; want 200 with the complete CRL", hdrCRLBase, rec.Code, rec.Header().Get(hdrDeltaCRL))
		}
	})
	t.Run("health and metrics", func(t *testing.T) {
		if body := f.do(t, "GET", "/healthz").Body.String(); !hasLine(body, "delta-crl-number: "+d.Number().String()) {
			t.Errorf("/healthz:\n%s", body)
		}
		m := f.metrics(t)
		for _, line := range []string{
			"minica_serve_delta_crl_number " + d.Number().String(),
			"minica_serve_delta_crl_reloads_total 1", // the revocation's; the empty delta came with its CRL
		} {
			if !hasLine(m, line) {
				t.Errorf("metrics lack %q:\n%s", line, m)
			}
		}
		// Every delta answered above: /crl-delta.der twice, the table's three.
		if !hasLine(m, "minica_serve_crl_answers_total{kind=\"delta\"} 6") {
			t.Errorf("metrics do not count 6 delta answers:\n%s", m)
		}
	})
}

// The bytes sent are counted by kind, a 304 and a HEAD not.
func TestDeltaMetricsBytes(t *testing.T) {
	f := newDeltaFixture(t)
	completeLen := len(f.do(t, "GET", "/crl.der").Body.Bytes())
	base := f.completeNumber().String()
	f.revokeDelta(t, "alice")
	f.srv.check()
	delta := f.do(t, "GET", "/crl.der", hdrCRLBase, base)
	f.do(t, "HEAD", "/crl.der", hdrCRLBase, base)
	f.do(t, "GET", "/crl.der", hdrCRLBase, base, "If-None-Match", delta.Header().Get("ETag"))
	m := f.metrics(t)
	for _, line := range []string{
		`minica_serve_crl_answers_total{kind="complete"} 1`,
		`minica_serve_crl_answers_total{kind="delta"} 1`,
		`minica_serve_crl_sent_bytes_total{kind="complete"} ` + strconv.Itoa(completeLen),
		`minica_serve_crl_sent_bytes_total{kind="delta"} ` + strconv.Itoa(delta.Body.Len()),
	} {
		if !hasLine(m, line) {
			t.Errorf("metrics lack %q:\n%s", line, m)
		}
	}
}

// A new delta CRL wakes the long polls that follow deltas (Minica-CRL-Base,
// /crl-delta.der) and answers them with it; a long poll of a client that
// holds the complete CRL (no Minica-CRL-Base, or a base the delta does not
// apply to) sleeps on until its wait ends, and then answers 304.
func TestDeltaLongPoll(t *testing.T) {
	f := newDeltaFixture(t)
	completeTag := f.do(t, "GET", "/crl.der").Header().Get("ETag")
	base := f.completeNumber()
	f.revokeDelta(t, "alice")
	f.srv.check()
	first := f.do(t, "GET", "/crl-delta.der").Header().Get("ETag")

	deltaPoll := f.startPoll(t, hdrCRLBase, base.String(), "If-None-Match", first, "Prefer", "wait=30")
	deltaOnly := f.startGet(t, context.Background(), "/crl-delta.der", "If-None-Match", first, "Prefer", "wait=30")
	plainPoll := f.startPoll(t, "If-None-Match", completeTag, "Prefer", "wait=30")
	oldBase := f.startPoll(t, hdrCRLBase, "0", "If-None-Match", completeTag, "Prefer", "wait=30")
	for range 4 {
		f.timers.await(t)
	}
	for _, p := range []<-chan *httptest.ResponseRecorder{deltaPoll, deltaOnly, plainPoll, oldBase} {
		pending(t, p)
	}

	bob := f.revokeDelta(t, "bob")
	f.srv.check()
	for name, p := range map[string]<-chan *httptest.ResponseRecorder{"Minica-CRL-Base": deltaPoll, "/crl-delta.der": deltaOnly} {
		rec := answer(t, p)
		d := f.parseDelta(t, rec)
		if !d.IsRevoked(bob) || rec.Header().Get("ETag") == first || rec.Header().Get("Preference-Applied") != "wait=30" {
			t.Errorf("%s poll: delta %s lists bob %t, ETag %s, Preference-Applied %q; want the new delta, wait=30", name, d.Number(),
				d.IsRevoked(bob), rec.Header().Get("ETag"), rec.Header().Get("Preference-Applied"))
		}
	}
	// Not woken: nothing arrives on the plain polls while they wait (a
	// bounded look; a wrong answer shows at once, as a 304 or 200).
	select {
	case rec := <-plainPoll:
		t.Fatalf("a plain long poll answered %d on a delta CRL; want it waiting", rec.Code)
	case rec := <-oldBase:
		t.Fatalf("a long poll with a base the delta does not apply to answered %d; want it waiting", rec.Code)
	case <-time.After(100 * time.Millisecond):
	}
	if m := f.metrics(t); !hasLine(m, "minica_serve_long_polls 2") {
		t.Errorf("want 2 long polls waiting:\n%s", m)
	}
	f.timers.fireAll()
	for _, p := range []<-chan *httptest.ResponseRecorder{plainPoll, oldBase} {
		if rec := answer(t, p); rec.Code != 304 || rec.Header().Get("ETag") != completeTag {
			t.Errorf("= %d, ETag %q; want 304 naming the complete CRL", rec.Code, rec.Header().Get("ETag"))
		}
	}
}

// A complete CRL signed after a delta CRL ends the delta: a client that
// holds the old base gets the complete CRL, at once or from its long poll,
// and a plain long poll is woken by it as before.
func TestDeltaThenComplete(t *testing.T) {
	f := newDeltaFixture(t)
	completeTag := f.do(t, "GET", "/crl.der").Header().Get("ETag")
	base := f.completeNumber().String()
	alice := f.revokeDelta(t, "alice")
	f.srv.check()
	deltaTag := f.do(t, "GET", "/crl-delta.der").Header().Get("ETag")
	deltaPoll := f.startPoll(t, hdrCRLBase, base, "If-None-Match", deltaTag, "Prefer", "wait=30")
	plainPoll := f.startPoll(t, "If-None-Match", completeTag, "Prefer", "wait=30")
	f.timers.await(t)
	f.timers.await(t)

	info := f.publishElsewhere(t)
	f.srv.check()
	for name, p := range map[string]<-chan *httptest.ResponseRecorder{"delta": deltaPoll, "plain": plainPoll} {
		rec := answer(t, p)
		if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), info.DER) || rec.Header().Get(hdrDeltaCRL) != "" {
			t.Errorf("%s poll = %d, %d bytes, %s %q; want 200 with the new complete CRL %s", name, rec.Code, rec.Body.Len(),
				hdrDeltaCRL, rec.Header().Get(hdrDeltaCRL), info.Number)
		}
	}
	rec := f.do(t, "GET", "/crl.der", hdrCRLBase, base)
	if rec.Header().Get(hdrDeltaCRL) != "" || !bytes.Equal(rec.Body.Bytes(), info.DER) {
		t.Fatalf("old base after a complete CRL = %d, %s %q; want the complete CRL", rec.Code, hdrDeltaCRL, rec.Header().Get(hdrDeltaCRL))
	}
	if crl := f.srv.CRL(); crl.Number().Cmp(info.Number) < 0 || !crl.IsRevoked(alice) {
		t.Errorf("CRL() = %s, alice revoked %t; want at least %s, alice revoked", crl.Number(), crl.IsRevoked(alice), info.Number)
	}
	// The empty delta signed after the complete CRL is against it, and
	// is what a client holding that CRL gets.
	d := f.parseDelta(t, f.do(t, "GET", "/crl-delta.der"))
	if d.DeltaBase().Cmp(info.Number) != 0 || d.Len() != 0 {
		t.Errorf("delta after the complete CRL %s: base %s, %d entries; want base %s, empty", info.Number, d.DeltaBase(), d.Len(), info.Number)
	}
	if rec := f.do(t, "GET", "/crl.der", hdrCRLBase, info.Number.String()); rec.Header().Get(hdrDeltaCRL) != "base="+info.Number.String() {
		t.Errorf("the new base gets %d, %s %q; want the empty delta", rec.Code, hdrDeltaCRL, rec.Header().Get(hdrDeltaCRL))
	}
}

// A revocation published as a delta CRL is not unpublished: serve does
// not re-sign the complete CRL for it a round later.
func TestDeltaNotRepublished(t *testing.T) {
	f := newDeltaFixture(t)
	f.srv.check()
	complete := f.do(t, "GET", "/crl.der").Header().Get("ETag")
	f.revokeDelta(t, "alice")
	f.srv.check()
	f.advance(DefaultPollInterval)
	f.srv.check()
	if got := f.do(t, "GET", "/crl.der").Header().Get("ETag"); got != complete || strings.Contains(f.logText(), "crl-unpublished") {
		t.Fatalf("complete CRL %s after a delta; want %s kept, no crl-unpublished in the log:\n%s", got, complete, f.logText())
	}
}

// completeNumber is the number of the complete CRL served (CRL() has the
// delta applied).
func (f *fixture) completeNumber() *big.Int { return f.srv.cur.Load().crl.Number() }

// The protocol's client, crlsource.HTTP, over real HTTP on 127.0.0.1: it
// gets the delta for its base, a 304 while it holds the delta, and the
// complete CRL without a base.
func TestDeltaWithCRLSource(t *testing.T) {
	f := newDeltaFixture(t)
	complete := f.do(t, "GET", "/crl.der").Body.Bytes()
	base := f.completeNumber().String()
	f.revokeDelta(t, "alice")
	f.srv.check()
	ts := httptest.NewServer(f.srv.Handler())
	defer ts.Close()
	src := &crlsource.HTTP{URL: ts.URL + "/crl.der"}
	ctx := context.Background()

	resp, err := src.Fetch(ctx, crlsource.Held{Data: complete, Base: base}, 0)
	if err != nil || !resp.Delta {
		t.Fatalf("Fetch(base %s) = %+v, %v; want a delta", base, resp, err)
	}
	if d, err := revoke.ParseDelta(resp.Data, f.ca.Cert); err != nil || d.DeltaBase().String() != base {
		t.Fatalf("ParseDelta() = %v; want a delta against %s", err, base)
	}
	if again, err := src.Fetch(ctx, crlsource.Held{Data: resp.Data, ETag: resp.ETag, LastModified: resp.LastModified, Base: base}, 0); err != nil || !again.NotModified {
		t.Fatalf("Fetch(holding the delta) = %+v, %v; want 304", again, err)
	}
	plainResp, err := src.Fetch(ctx, crlsource.Held{Data: resp.Data}, 0)
	if err != nil || plainResp.Delta || !bytes.Equal(plainResp.Data, complete) {
		t.Fatalf("Fetch(no base) = delta %t, %v; want the complete CRL", plainResp != nil && plainResp.Delta, err)
	}
}

// While deltas are signed, serve signs a complete CRL once the delta lists
// a change and its base is older than FullEvery, so that readers of the
// complete CRL alone see the revocation; an empty delta asks for nothing.
func TestDeltaCompleteDue(t *testing.T) {
	f := newDeltaFixture(t)
	for _, c := range []*ca.CA{f.ca, f.other(t)} {
		unlock, err := c.Lock(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		err = c.SetDeltaSettings(ca.DeltaSettings{From: -1, FullEvery: ca.Duration(time.Minute)})
		unlock()
		if err != nil {
			t.Fatal(err)
		}
	}
	base := f.completeNumber()
	f.advance(2 * time.Minute)
	f.srv.check()
	if got := f.completeNumber(); got.Cmp(base) != 0 {
		t.Fatalf("an empty delta over an old base: complete CRL %s; want %s kept", got, base)
	}
	f.publishElsewhere(t) // a new base, now
	f.srv.check()
	base = f.completeNumber()
	bob := f.revokeDelta(t, "bob")
	f.srv.check()
	if f.completeNumber().Cmp(base) != 0 || f.srv.cur.Load().crl.IsRevoked(bob) || !f.srv.CRL().IsRevoked(bob) {
		t.Fatalf("complete CRL %s, bob listed %v; want %s kept, bob in the delta only", f.completeNumber(), f.srv.cur.Load().crl.IsRevoked(bob), base)
	}
	f.advance(2 * time.Minute)
	f.srv.check()
	if f.completeNumber().Cmp(base) <= 0 || !f.srv.cur.Load().crl.IsRevoked(bob) {
		t.Fatalf("past FullEvery: complete CRL %s, bob listed %v; want a new complete CRL listing bob\n%s", f.completeNumber(), f.srv.cur.Load().crl.IsRevoked(bob), f.logText())
	}
}
