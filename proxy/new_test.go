package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/big"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"minica/identity"
	"minica/internal/testca"
)

func TestNewErrors(t *testing.T) {
	ca := testca.New(t, "Test CA")
	stranger := testca.New(t, "Stranger")
	now := time.Now()
	srv, srvKey := ca.Server(t, "localhost")
	e := &env{t: t, ca: ca}
	crl := func(signer *testca.CA, this, next time.Time) crlFunc {
		data := e.makeCRLWith(big.NewInt(1), this, next, signer)
		return func() ([]byte, error) { return data, nil }
	}
	good := func() Config {
		return Config{
			Upstream: "http://127.0.0.1:1",
			LoadCA:   func() ([]*x509.Certificate, error) { return []*x509.Certificate{ca.Cert}, nil },
			CRL:      crl(ca, now.Add(-time.Minute), now.Add(time.Hour)),
			LoadCert: func() (tls.Certificate, error) {
				return tls.Certificate{Certificate: [][]byte{srv.Raw}, PrivateKey: srvKey}, nil
			},
		}
	}
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string
		is      error
	}{
		{name: "no loaders", mod: func(c *Config) { c.CRL = nil }, wantErr: "config: LoadCA, CRL and LoadCert are required"},
		{name: "negative conns", mod: func(c *Config) { c.MaxConns = -1 }, wantErr: "config: MaxConns must not be negative (-1)"},
		{name: "negative timeout", mod: func(c *Config) { c.IdleTimeout = -time.Second }, wantErr: "config: IdleTimeout must not be negative (-1s)"},
		{name: "negative handshakes", mod: func(c *Config) { c.MaxHandshakes = -1 }, wantErr: "config: MaxHandshakes must not be negative (-1)"},
		{name: "negative per source", mod: func(c *Config) { c.MaxHandshakesPerSource = -2 }, wantErr: "config: MaxHandshakesPerSource must not be negative (-2)"},
		{name: "negative body timeout", mod: func(c *Config) { c.BodyTimeout = -time.Second }, wantErr: "config: BodyTimeout must not be negative (-1s)"},
		{name: "negative body rate", mod: func(c *Config) { c.BodyMinRate = -1 }, wantErr: "config: BodyMinRate must not be negative (-1)"},
		{name: "negative write timeout", mod: func(c *Config) { c.WriteTimeout = -time.Millisecond }, wantErr: "config: WriteTimeout must not be negative (-1ms)"},
		{name: "bad profile", mod: func(c *Config) { c.Profile = "haproxy" }, is: identity.ErrUnknownProfile},
		{name: "bad custom header", mod: func(c *Config) { c.CustomHeaders = []string{"X"} }, wantErr: `custom header "X": want NAME=FIELD`},
		{name: "upstream scheme", mod: func(c *Config) { c.Upstream = "ftp://x" }, wantErr: `upstream "ftp://x": want http://HOST:PORT, https://HOST:PORT or unix:/PATH`},
		{name: "upstream no host", mod: func(c *Config) { c.Upstream = "http://" }, wantErr: `upstream "http://": want http://HOST:PORT, https://HOST:PORT or unix:/PATH`},
		{name: "upstream empty socket", mod: func(c *Config) { c.Upstream = "unix:" }, wantErr: `upstream "unix:": empty socket path`},
		{name: "CA error", mod: func(c *Config) {
			c.LoadCA = func() ([]*x509.Certificate, error) { return nil, errors.New("boom") }
		}, wantErr: "loading CA bundle: boom"},
		{name: "CA empty", mod: func(c *Config) {
			c.LoadCA = func() ([]*x509.Certificate, error) { return nil, nil }
		}, is: ErrNoCA},
		{name: "CRL wrong signer", mod: func(c *Config) { c.CRL = crl(stranger, now.Add(-time.Minute), now.Add(time.Hour)) }, is: ErrCRLUnverified},
		{name: "CRL expired", mod: func(c *Config) { c.CRL = crl(ca, now.Add(-2*time.Hour), now.Add(-time.Hour)) }, is: ErrCRLExpired},
		{name: "CRL future", mod: func(c *Config) { c.CRL = crl(ca, now.Add(time.Hour), now.Add(2*time.Hour)) }, is: ErrCRLFuture},
		{name: "cert without key", mod: func(c *Config) {
			c.LoadCert = func() (tls.Certificate, error) { return tls.Certificate{Certificate: [][]byte{srv.Raw}}, nil }
		}, wantErr: "loading server certificate: server certificate has no private key"},
		{name: "cert garbage", mod: func(c *Config) {
			c.LoadCert = func() (tls.Certificate, error) {
				return tls.Certificate{Certificate: [][]byte{{1, 2}}, PrivateKey: srvKey}, nil
			}
		}, wantErr: "parsing server certificate: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good()
			tt.mod(&cfg)
			_, err := New(cfg)
			if err == nil {
				t.Fatal("New() succeeded; want an error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("New() error = %v; want %v", err, tt.is)
			}
			if tt.wantErr != "" && !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("New() error = %q; want %q", err, tt.wantErr)
			}
		})
	}
	t.Run("grace lets an expired CRL start", func(t *testing.T) {
		cfg := good()
		cfg.CRL = crl(ca, now.Add(-2*time.Hour), now.Add(-time.Hour))
		cfg.CRLGrace = 2 * time.Hour
		if _, err := New(cfg); err != nil {
			t.Errorf("New() error = %v", err)
		}
	})
}

func TestMetricsAndHealthValues(t *testing.T) {
	e := newEnv(t, nil)
	// The env's CRL: thisUpdate a minute ago, nextUpdate in an hour.
	e.advance(30 * time.Minute)
	var m strings.Builder
	e.p.writeMetrics(&m)
	out := m.String()
	for _, prefix := range []string{
		"minica_proxy_crl_number 1\n",
		"minica_proxy_crl_age_seconds 186",         // 31 minutes
		"minica_proxy_crl_next_update_seconds 179", // 30 minutes
		"minica_proxy_certificate_days_left 0.9",
	} {
		if !strings.Contains(out, prefix) {
			t.Errorf("metrics lack %q:\n%s", prefix, out)
		}
	}
	// A client certificate valid for a day is expiring soon.
	cert, key := e.ca.Client(t, "alice")
	if code, body := e.get(e.client(cert, key, false), "/", nil); code != 200 {
		t.Fatalf("status = %d %q; want 200", code, body)
	}
	m.Reset()
	e.p.writeMetrics(&m)
	if !strings.Contains(m.String(), "minica_proxy_client_certificates_expiring_soon 1\n") {
		t.Errorf("metrics:\n%s", m.String())
	}
	checkHealth(t, e, 200, "ok\n")
	rec := httptest.NewRecorder()
	e.p.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); rec.Code != 200 || ct != "text/plain; version=0.0.4; charset=utf-8" ||
		!strings.Contains(rec.Body.String(), `minica_proxy_requests_total{code="200"} 1`+"\n") {
		t.Errorf("metrics handler: %d %q\n%s", rec.Code, ct, rec.Body.String())
	}
}
