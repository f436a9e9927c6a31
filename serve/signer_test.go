package serve

import (
	"crypto"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// statusSigner is a CA key that can become unusable, as ca's signer of a
// key in a PKCS#11 token does (ca.SignerStatus).
type statusSigner struct {
	crypto.Signer
	mu      sync.Mutex
	err     error
	checks  int
	heal    bool // the next Check finds the key again
	reopens uint64
	log     func(string, ...string)
}

func (s *statusSigner) Err() error { s.mu.Lock(); defer s.mu.Unlock(); return s.err }

func (s *statusSigner) Check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks++
	if s.heal && s.err != nil {
		s.err, s.heal = nil, false
		s.reopens++
	}
	return s.err
}

func (s *statusSigner) Reopens() uint64 { s.mu.Lock(); defer s.mu.Unlock(); return s.reopens }

func (s *statusSigner) SetLog(f func(string, ...string)) { s.mu.Lock(); s.log = f; s.mu.Unlock() }

func (s *statusSigner) set(err error, heal bool) {
	s.mu.Lock()
	s.err, s.heal = err, heal
	s.mu.Unlock()
}

func (s *statusSigner) checked() int { s.mu.Lock(); defer s.mu.Unlock(); return s.checks }

// While the CA key cannot sign (its token is gone), /healthz answers 503
// with can-sign: false and minica_serve_can_sign is 0; Watch's rounds
// check the key (every round while it fails, every SignerCheckInterval
// while it works), and once it signs again, so does /healthz. The
// signer's events go to serve's log.
func TestHealthTellsSignerState(t *testing.T) {
	ss := &statusSigner{}
	f := newFixture(t, func(c *Config) {
		ss.Signer = c.Signer
		c.Signer = ss
	})
	health := func() (int, string) {
		rec := f.do(t, "GET", "/healthz")
		return rec.Code, rec.Body.String()
	}
	if code, body := health(); code != 200 || !strings.Contains(body, "can-sign: true\n") {
		t.Fatalf("/healthz with a working key = %d %q", code, body)
	}
	if ss.log == nil {
		t.Fatal("serve did not give the signer its log")
	}
	ss.log("ca-key-reopened", "token", `PKCS#11 token "minica"`)
	if !strings.Contains(f.logText(), `ca-key-reopened token="PKCS#11 token \"minica\""`) {
		t.Errorf("the signer's event is not in serve's log:\n%s", f.logText())
	}

	ss.set(errors.New(`the CA key in PKCS#11 token "minica" is unusable (pkcs11: 0x82: CKR_OBJECT_HANDLE_INVALID), and opening the token again failed: the module has no such token`), false)
	code, body := health()
	first, _, _ := strings.Cut(body, "\n")
	if code != 503 || first != `unavailable: the CA key cannot sign: the CA key in PKCS#11 token "minica" is unusable (pkcs11: 0x82: CKR_OBJECT_HANDLE_INVALID), and opening the token again failed: the module has no such token` ||
		!strings.Contains(body, "can-sign: false\n") {
		t.Fatalf("/healthz with the key unusable = %d %q", code, body)
	}
	if m := f.metrics(t); !hasLine(m, "minica_serve_can_sign 0") {
		t.Errorf("metrics lack minica_serve_can_sign 0:\n%s", m)
	}
	n := ss.checked()
	f.srv.check()
	f.srv.check()
	if got := ss.checked() - n; got != 2 {
		t.Errorf("two rounds with the key unusable checked it %d times; want 2", got)
	}
	ss.set(ss.Err(), true)
	f.srv.check()
	if code, body := health(); code != 200 || !strings.Contains(body, "can-sign: true\n") {
		t.Fatalf("/healthz once the key signs again = %d %q", code, body)
	}
	if m := f.metrics(t); !hasLine(m, "minica_serve_can_sign 1") || !hasLine(m, "minica_serve_ca_key_reopens_total 1") {
		t.Errorf("metrics lack can_sign 1 and one re-opening:\n%s", m)
	}
	// A working key is checked once every SignerCheckInterval.
	n = ss.checked()
	f.srv.check()
	f.clock.Set(f.clock.Now().Add(SignerCheckInterval - time.Second))
	f.srv.check()
	if got := ss.checked() - n; got != 0 {
		t.Errorf("rounds within SignerCheckInterval of the last check checked a working key %d times; want 0", got)
	}
	f.clock.Set(f.clock.Now().Add(time.Second))
	f.srv.check()
	if got := ss.checked() - n; got != 1 {
		t.Errorf("the round at SignerCheckInterval checked a working key %d times; want 1", got)
	}
}
