package proxy

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"minica/crlsource"
	"minica/internal/testca"
	"minica/revoke"
)

// The error of a Reload names the part that failed, and a refused CRL's
// reason; the CRL in use stays.
func TestCRLRefusalReason(t *testing.T) {
	e := newEnv(t, nil)
	stranger := testca.New(t, "Other CA")
	good := e.makeCRLWith(big.NewInt(10), e.now().Add(-time.Minute), e.now().Add(time.Hour), e.ca)
	e.setCRL(good)
	if err := e.p.Reload(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		crl  []byte
		want string
	}{
		{"garbage", []byte("garbage"), revoke.RefusalMalformed},
		{"truncated", good[:len(good)/2], revoke.RefusalMalformed},
		{"html page", []byte("<html><body><h1>502 Bad Gateway</h1></body></html>"), revoke.RefusalMalformed},
		{"other CA", e.makeCRLWith(big.NewInt(11), e.now(), e.now().Add(time.Hour), stranger), revoke.RefusalWrongIssuer},
		{"replay", e.makeCRLWith(big.NewInt(9), e.now(), e.now().Add(time.Hour), e.ca), revoke.RefusalOlder},
		{"future", e.makeCRLWith(big.NewInt(12), e.now().Add(time.Hour), e.now().Add(2*time.Hour), e.ca), revoke.RefusalFuture},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.setCRL(tt.crl)
			err := reloadFailure(e.p.Reload(), "crl")
			var re *ReloadError
			if !errors.As(err, &re) || re.File != "crl" {
				t.Fatalf("reloadFailure(crl) = %v; want a *ReloadError of the crl", err)
			}
			if got := crlRefusalReason(err); got != tt.want {
				t.Errorf("crlRefusalReason(%v) = %q; want %q", err, got, tt.want)
			}
			if n := e.p.trust.Load().crl.Number(); n.Int64() != 10 {
				t.Errorf("CRL in use = %d; want 10 kept", n)
			}
		})
	}
	e.setCRL(good)
	if err := reloadFailure(e.p.Reload(), "crl"); err != nil {
		t.Errorf("reloadFailure(crl) after a good reload = %v; want nil", err)
	}
}

func TestCRLFetchMetrics(t *testing.T) {
	e := newEnv(t, nil)
	var m strings.Builder
	e.p.writeMetrics(&m)
	if strings.Contains(m.String(), "minica_proxy_crl_last_fetch_success_seconds") {
		t.Error("last fetch success reported before any fetch")
	}
	crlSink{e.p}.FetchFailed("http-status", errors.New(`fetching CRL "http://x/crl.der": server answered 404 Not Found`))
	crlSink{e.p}.Fetched(time.Unix(1900000000, 0))
	m.Reset()
	e.p.writeMetrics(&m)
	for _, want := range []string{
		`minica_proxy_crl_fetch_failures_total{reason="http-status"} 1`,
		"minica_proxy_crl_last_fetch_success_seconds 1.9e+09",
	} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	e.waitLog("crl-fetch-failed", "reason=http-status", `error="fetching CRL`)
}

// followedCRL is a CRL source that brings new CRLs itself: it hands the
// test the sink of Follow, and stays until Serve stops following it.
type followedCRL struct {
	crlFunc
	sinks chan crlsource.Sink
	ended chan struct{}
}

func (f followedCRL) Follow(ctx context.Context, sink crlsource.Sink) {
	defer close(f.ended)
	f.sinks <- sink
	<-ctx.Done()
}

// Serve follows a source that brings new CRLs itself: each one it reports
// is reloaded at once, a refused one comes back as a *crlsource.Refusal
// with its reason, fetches are counted; the follower stops with Serve.
func TestServeFollowsCRLSource(t *testing.T) {
	src := followedCRL{sinks: make(chan crlsource.Sink, 1), ended: make(chan struct{})}
	t.Cleanup(func() { // after the env's: Serve has returned
		select {
		case <-src.ended:
		default:
			t.Error("Follow still runs after Serve returned")
		}
	})
	e := newEnv(t, func(c *Config) {
		src.crlFunc = c.CRL.(crlFunc)
		c.CRL = src
	})
	var sink crlsource.Sink
	select {
	case sink = <-src.sinks:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not follow the CRL source within 10s")
	}
	e.setCRL(e.makeCRLWith(big.NewInt(10), e.now().Add(-time.Minute), e.now().Add(time.Hour), e.ca))
	if err := sink.Changed(); err != nil {
		t.Fatalf("Changed() with a newer CRL = %v", err)
	}
	if n := e.p.trust.Load().crl.Number(); n.Int64() != 10 {
		t.Fatalf("CRL in use = %d; want 10", n)
	}
	e.setCRL(e.makeCRLWith(big.NewInt(9), e.now(), e.now().Add(time.Hour), e.ca))
	var r *crlsource.Refusal
	if err := sink.Changed(); !errors.As(err, &r) || r.Reason != revoke.RefusalOlder || !errors.Is(err, ErrCRLOlder) {
		t.Fatalf("Changed() with a replay = %v; want a *crlsource.Refusal, older-number", err)
	}
	if n := e.p.trust.Load().crl.Number(); n.Int64() != 10 {
		t.Errorf("CRL in use = %d after a replay; want 10 kept", n)
	}
	sink.Fetched(time.Unix(1900000000, 0))
	if got := e.metric("minica_proxy_crl_last_fetch_success_seconds"); got != "minica_proxy_crl_last_fetch_success_seconds 1.9e+09" {
		t.Errorf("metric = %q; want the last fetch", got)
	}
}
