package proxy

import (
	"errors"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"minica/internal/testca"
	"minica/revoke"
)

func TestRevocationOnNewResumedAndOpenConnections(t *testing.T) {
	eachProtocol(t, "", func(t *testing.T, h2 bool) {
		e := newEnv(t, nil)
		cert, key := e.ca.Client(t, "simon")

		// An open keep-alive (or HTTP/2) connection.
		open := e.client(cert, key, h2)
		if code, _ := e.get(open, "/", nil); code != 200 {
			t.Fatalf("status = %d; want 200", code)
		}

		// A session that resumes.
		resuming, _ := e.resumingClient(t, cert, key)

		e.setCRL(e.makeCRL(cert.SerialNumber))
		if err := e.p.Reload(); err != nil {
			t.Fatalf("Reload() error = %v", err)
		}

		// The idle connection was closed at the reload (see
		// TestRevocationClosesIdleConnections): the client's next request
		// needs a new handshake, which is refused.
		e.waitLog("idle-closed", "reason=revoked")
		if _, err := open.Get(e.url("/")); err == nil {
			t.Error("open connection: GET succeeded; want refused")
		}
		if _, err := resuming.Get(e.url("/")); err == nil {
			t.Error("resumed session: GET succeeded; want refused")
		}
		if _, err := e.client(cert, key, h2).Get(e.url("/")); err == nil {
			t.Error("new connection: GET succeeded; want refused")
		}
		e.waitLog("handshake-refused", "reason=revoked")
	})
}

func TestCRLExpiry(t *testing.T) {
	t.Run("fail closed", func(t *testing.T) {
		e := newEnv(t, nil)
		cert, key := e.ca.Client(t, "alice")
		open := e.client(cert, key, false)
		if code, _ := e.get(open, "/", nil); code != 200 {
			t.Fatalf("status = %d; want 200", code)
		}
		e.advance(2 * time.Hour) // the CRL's nextUpdate is an hour away
		if _, err := e.client(cert, key, false).Get(e.url("/")); err == nil {
			t.Error("new connection with an expired CRL succeeded")
		}
		e.waitLog("handshake-refused", "reason=crl-expired")
		e.waitLog("crl-expired-error")
		if code, _ := e.get(open, "/", nil); code != http.StatusServiceUnavailable {
			t.Errorf("open connection: status = %d; want 503", code)
		}
		checkHealth(t, e, 503, "unavailable: CRL expired at ")

		// A fresh CRL brings the clients back.
		e.setCRL(e.makeCRLWith(big.NewInt(5), e.now(), e.now().Add(time.Hour), e.ca))
		if err := e.p.Reload(); err != nil {
			t.Fatal(err)
		}
		if code, _ := e.get(open, "/", nil); code != 200 {
			t.Errorf("after a fresh CRL: status = %d; want 200", code)
		}
		checkHealth(t, e, 200, "ok\n")
	})
	t.Run("grace", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.CRLGrace = 2 * time.Hour })
		cert, key := e.ca.Client(t, "alice")
		e.advance(2 * time.Hour)
		if code, _ := e.get(e.client(cert, key, false), "/", nil); code != 200 {
			t.Errorf("within grace: status = %d; want 200", code)
		}
		e.waitLog("crl-grace-warning")
		checkHealth(t, e, 200, "ok: warning: CRL expired at ")
		e.advance(2 * time.Hour)
		if _, err := e.client(cert, key, false).Get(e.url("/")); err == nil {
			t.Error("past grace: GET succeeded; want refused")
		}
		checkHealth(t, e, 503, "unavailable")
	})
	t.Run("clock behind the CRL", func(t *testing.T) {
		e := newEnv(t, nil)
		cert, key := e.ca.Client(t, "alice")
		open := e.client(cert, key, false)
		if code, _ := e.get(open, "/", nil); code != 200 {
			t.Fatalf("status = %d; want 200", code)
		}
		e.advance(-30 * time.Second) // within the minute of skew: the CRL was made a minute ago
		if code, _ := e.get(e.client(cert, key, false), "/", nil); code != 200 {
			t.Errorf("within the skew: status = %d; want 200", code)
		}
		e.advance(-5 * time.Minute)
		if _, err := e.client(cert, key, false).Get(e.url("/")); err == nil {
			t.Error("new connection before the CRL's thisUpdate succeeded")
		}
		e.waitLog("handshake-refused", "reason=crl-not-yet-valid")
		if code, _ := e.get(open, "/", nil); code != http.StatusServiceUnavailable {
			t.Errorf("open connection: status = %d; want 503", code)
		}
		checkHealth(t, e, 503, "unavailable: CRL not valid before ")
	})
}

func checkHealth(t *testing.T, e *env, code int, prefix string) {
	t.Helper()
	rec := &respRecorder{header: http.Header{}}
	e.p.HealthHandler().ServeHTTP(rec, nil)
	if rec.code != code || !strings.HasPrefix(rec.body.String(), prefix) {
		t.Errorf("health = %d %q; want %d %q...", rec.code, rec.body.String(), code, prefix)
	}
}

type respRecorder struct {
	header http.Header
	code   int
	body   strings.Builder
}

func (r *respRecorder) Header() http.Header { return r.header }
func (r *respRecorder) WriteHeader(c int)   { r.code = c }
func (r *respRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = 200
	}
	return r.body.Write(b)
}

func TestBadCRLOnReloadKeepsTheOld(t *testing.T) {
	e := newEnv(t, nil)
	cert, key := e.ca.Client(t, "alice")
	stranger := testca.New(t, "Test CA")
	tests := []struct {
		name       string
		crl        func() []byte
		wantErr    error
		wantMsg    string
		wantReason string
	}{
		{name: "corrupt", crl: func() []byte { return []byte("-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n") }, wantErr: ErrCRLUnverified},
		{name: "wrong signer", crl: func() []byte {
			return e.makeCRLWith(big.NewInt(100), e.now(), e.now().Add(time.Hour), stranger, cert.SerialNumber)
		}, wantErr: ErrCRLUnverified},
		{name: "lower number", crl: func() []byte {
			return e.makeCRLWith(big.NewInt(0), e.now(), e.now().Add(time.Hour), e.ca, cert.SerialNumber)
		}, wantErr: ErrCRLOlder, wantMsg: "loading CRL: CRL number is lower than the current one (0 < 1)", wantReason: revoke.RefusalOlder},
		{name: "future thisUpdate", crl: func() []byte {
			return e.makeCRLWith(big.NewInt(100), e.now().Add(time.Hour), e.now().Add(2*time.Hour), e.ca, cert.SerialNumber)
		}, wantErr: ErrCRLFuture, wantReason: revoke.RefusalFuture},
		// A higher number, but past its nextUpdate: taken, it would refuse
		// every client and hold back the current CRL (its number is lower)
		// until the CA signed again.
		{name: "expired, with a higher number", crl: func() []byte {
			return e.makeCRLWith(big.NewInt(100), e.now().Add(-2*time.Hour), e.now().Add(-time.Hour), e.ca, cert.SerialNumber)
		}, wantErr: ErrCRLExpired, wantReason: revoke.RefusalExpired},
		{name: "missing", crl: func() []byte { return nil }, wantMsg: "loading CRL: no CRL file", wantReason: revoke.RefusalOther},
	}
	c := e.client(cert, key, false)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.setCRL(tt.crl())
			err := e.p.Reload()
			if err == nil {
				t.Fatal("Reload() succeeded; want an error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Reload() error = %v; want %v", err, tt.wantErr)
			}
			if tt.wantMsg != "" && err.Error() != tt.wantMsg {
				t.Errorf("Reload() error = %q; want %q", err, tt.wantMsg)
			}
			if got := crlRefusalReason(reloadFailure(err, "crl")); tt.wantReason != "" && got != tt.wantReason {
				t.Errorf("crlRefusalReason() = %q; want %q", got, tt.wantReason)
			}
			if code, _ := e.get(c, "/", nil); code != 200 {
				t.Errorf("status = %d; want 200 (old CRL kept)", code)
			}
			var m strings.Builder
			e.p.writeMetrics(&m)
			want := `minica_proxy_reload_failures_total{file="crl"} ` + string(rune('1'+i))
			if !strings.Contains(m.String(), want) {
				t.Errorf("metrics lack %q", want)
			}
		})
	}
	e.waitLog("reload-failed", "file=crl")
}

func TestCertificateExpiresOnOpenConnection(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.CRLGrace = 72 * time.Hour })
	cert, key := e.ca.Client(t, "alice") // valid for a day
	open := e.client(cert, key, true)
	if code, _ := e.get(open, "/", nil); code != 200 {
		t.Fatalf("status = %d; want 200", code)
	}
	e.advance(25 * time.Hour)
	if code, body := e.get(open, "/", nil); code != http.StatusForbidden || body != "client certificate expired\n" {
		t.Errorf("got %d %q; want 403 client certificate expired", code, body)
	}
	e.waitLog("request ", "status=403", "reason=expired")
}
