package proxy

import (
	"crypto/x509"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"minica/internal/testca"
	"minica/revoke"
)

func revokeParser(data []byte, issuer *x509.Certificate) (Revocations, error) {
	crl, err := revoke.ParseCRL(data, issuer)
	if err != nil {
		return nil, err
	}
	return crl, nil
}

// The error of a Reload names the part that failed, and a refused CRL's
// reason; the CRL in use stays.
func TestCRLRefusalReason(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ParseCRL = revokeParser })
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
			err := ReloadFailure(e.p.Reload(), "crl")
			var re *ReloadError
			if !errors.As(err, &re) || re.File != "crl" {
				t.Fatalf("ReloadFailure(crl) = %v; want a *ReloadError of the crl", err)
			}
			if got := CRLRefusalReason(err); got != tt.want {
				t.Errorf("CRLRefusalReason(%v) = %q; want %q", err, got, tt.want)
			}
			if n := e.p.trust.Load().crl.Number(); n.Int64() != 10 {
				t.Errorf("CRL in use = %d; want 10 kept", n)
			}
		})
	}
	e.setCRL(good)
	if err := ReloadFailure(e.p.Reload(), "crl"); err != nil {
		t.Errorf("ReloadFailure(crl) after a good reload = %v; want nil", err)
	}
}

func TestCRLFetchMetrics(t *testing.T) {
	e := newEnv(t, nil)
	var m strings.Builder
	e.p.writeMetrics(&m)
	if strings.Contains(m.String(), "minica_proxy_crl_last_fetch_success_seconds") {
		t.Error("last fetch success reported before any fetch")
	}
	e.p.CRLFetchFailed("http-status", errors.New(`fetching CRL "http://x/crl.der": server answered 404 Not Found`))
	e.p.CRLFetched(time.Unix(1900000000, 0))
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
