package ca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// errFakeLost stands for CKR_OBJECT_HANDLE_INVALID and its kin.
var errFakeLost = errors.New("fake: 0x82: CKR_OBJECT_HANDLE_INVALID")

// fakeHSM is a token for the token signer's tests: it can lose the
// sessions it opened (a failover), be gone (open fails), and counts opens.
type fakeHSM struct {
	mu    sync.Mutex
	key   crypto.Signer
	gen   int // sessions of an older gen are lost
	gone  bool
	opens int
}

type fakeKey struct {
	hsm *fakeHSM
	gen int
}

func (k *fakeKey) Public() crypto.PublicKey { return k.hsm.key.Public() }

func (k *fakeKey) Sign(r io.Reader, d []byte, o crypto.SignerOpts) ([]byte, error) {
	if err := k.hsm.alive(k.gen); err != nil {
		return nil, err
	}
	if o == nil {
		return nil, errors.New("no hash given")
	}
	return k.hsm.key.Sign(r, d, o)
}

func (k *fakeKey) info() (p11KeyInfo, error) { return p11KeyInfo{CanSign: true}, k.hsm.alive(k.gen) }
func (k *fakeKey) destroy() error            { return nil }

type fakeSession struct{}

func (fakeSession) findKeys(id, label []byte) ([]p11Key, error)      { return nil, nil }
func (fakeSession) generate(KeyType, []byte, []byte) (p11Key, error) { return nil, nil }
func (fakeSession) close() error                                     { return nil }

func (h *fakeHSM) alive(gen int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gone || gen != h.gen {
		return errFakeLost
	}
	return nil
}

func (h *fakeHSM) open() (p11Token, p11Key, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opens++
	if h.gone {
		return nil, nil, errors.New("the module has no such token")
	}
	return fakeSession{}, &fakeKey{hsm: h, gen: h.gen}, nil
}

// failover ends every session opened so far.
func (h *fakeHSM) failover() { h.mu.Lock(); h.gen++; h.mu.Unlock() }

func (h *fakeHSM) setGone(gone bool) { h.mu.Lock(); h.gone = gone; h.gen++; h.mu.Unlock() }

func (h *fakeHSM) openCount() int { h.mu.Lock(); defer h.mu.Unlock(); return h.opens }

func newFakeSigner(t *testing.T) (*tokenSigner, *fakeHSM, *time.Time, *strings.Builder) {
	t.Helper()
	key, err := ECDSAP256.Generate()
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHSM{key: key}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tok, k, err := h.open()
	if err != nil {
		t.Fatal(err)
	}
	s := newTokenSigner("PKCS#11 token \"fake\"", tok, k, h.open, func(err error) bool { return errors.Is(err, errFakeLost) },
		func() time.Time { return now })
	var log strings.Builder
	var mu sync.Mutex
	s.SetLog(func(event string, kv ...string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(&log, event, strings.Join(kv, " "))
	})
	return s, h, &now, &log
}

func signWith(s crypto.Signer) error {
	d := sha256.Sum256([]byte("minica"))
	sig, err := s.Sign(rand.Reader, d[:], crypto.SHA256)
	if err == nil && !ecdsa.VerifyASN1(s.Public().(*ecdsa.PublicKey), d[:], sig) {
		err = errors.New("the signature does not verify")
	}
	return err
}

// A session lost under the signer (the token's failover, its sessions
// closed) is re-opened within the signature that found it: the caller
// sees a signature, the log one line for the loss and one for the
// re-opening.
func TestTokenSignerReopensLostSession(t *testing.T) {
	s, h, _, log := newFakeSigner(t)
	if err := signWith(s); err != nil {
		t.Fatal(err)
	}
	h.failover()
	if err := signWith(s); err != nil {
		t.Fatalf("Sign after a failover = %v; want a signature from the re-opened session", err)
	}
	if err := s.Err(); err != nil || s.Reopens() != 1 || h.openCount() != 2 {
		t.Fatalf("Err() = %v, Reopens() = %d, opens %d; want nil, 1, 2", err, s.Reopens(), h.openCount())
	}
	for _, want := range []string{"ca-key-unusable error " + errFakeLost.Error(), "ca-key-reopened token PKCS#11 token \"fake\""} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}

// While the token is gone, Sign fails saying so, Err says so, and the
// token is tried again only once the backoff has passed (1 s, doubling up
// to 30 s): a burst of requests does not hammer it. Check, with nothing
// to sign, brings the key back once the token is.
func TestTokenSignerTokenGone(t *testing.T) {
	s, h, now, log := newFakeSigner(t)
	h.setGone(true)
	err := signWith(s)
	if err == nil || !strings.Contains(err.Error(), `the CA key in PKCS#11 token "fake" is unusable (`+errFakeLost.Error()+`), and opening the token again failed: the module has no such token`) {
		t.Fatalf("Sign with the token gone = %v", err)
	}
	if s.Err() == nil || s.Err().Error() != err.Error() {
		t.Fatalf("Err() = %v; want %v", s.Err(), err)
	}
	for range 10 {
		if err := signWith(s); err == nil {
			t.Fatal("Sign with the token gone succeeded")
		}
	}
	if err := s.Check(); err == nil {
		t.Fatal("Check with the token gone = nil")
	}
	if n := h.openCount(); n != 2 {
		t.Fatalf("the token was opened %d times within the backoff; want 2 (the first and one retry)", n)
	}
	*now = now.Add(time.Second)
	signWith(s)
	*now = now.Add(time.Second) // the backoff is 2 s now
	signWith(s)
	if n := h.openCount(); n != 3 {
		t.Fatalf("opens after 2 s = %d; want 3 (one retry after 1 s, none 1 s into the 2 s backoff)", n)
	}
	if !strings.Contains(log.String(), "ca-key-reopen-failed error the module has no such token retry_in 2s") {
		t.Errorf("the log lacks the second failed re-open with its backoff:\n%s", log)
	}
	h.setGone(false)
	*now = now.Add(time.Minute)
	if err := s.Check(); err != nil {
		t.Fatalf("Check once the token is back = %v; want nil", err)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("Err() once the token is back = %v", err)
	}
	if err := signWith(s); err != nil {
		t.Fatalf("Sign once the token is back = %v", err)
	}
}

// An error that is no lost session (a bad argument) is returned as it is:
// nothing is re-opened and the key stays healthy. A closed signer signs
// nothing and opens nothing.
func TestTokenSignerOtherErrors(t *testing.T) {
	s, h, _, _ := newFakeSigner(t)
	d := sha256.Sum256([]byte("minica"))
	if _, err := s.Sign(rand.Reader, d[:], nil); err == nil || err.Error() != "no hash given" {
		t.Fatalf("Sign(nil opts) = %v; want the key's own error", err)
	}
	if s.Err() != nil || h.openCount() != 1 {
		t.Fatalf("after a bad argument: Err() = %v, opens %d; want nil, 1", s.Err(), h.openCount())
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	h.failover()
	if err := signWith(s); !errors.Is(err, errSignerClosed) {
		t.Fatalf("Sign after close = %v; want errSignerClosed", err)
	}
	if h.openCount() != 1 {
		t.Fatalf("a closed signer opened the token")
	}
}
