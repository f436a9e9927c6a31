package ca

import (
	"crypto"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// SignerStatus is implemented by the signer OpenSigner returns for a CA
// key in a PKCS#11 token, whose session a running process can lose: a
// network HSM fails over, a token is pulled and put back, the module's
// sessions are closed. Such a signer opens the token again and finds the
// key again by itself (see tokenSigner); this is what it tells of it.
type SignerStatus interface {
	// Err is nil while the key signs, else why its last use failed.
	Err() error
	// Check uses the key without signing (it reads an attribute through
	// the session, which fails as a signature would) and opens the token
	// again when its session or the key's handle is gone. It returns Err.
	Check() error
	// Reopens counts the times the token was opened again.
	Reopens() uint64
	// SetLog sets the function that gets one call per event, with its
	// name and key and value pairs; nil drops them.
	SetLog(func(event string, kv ...string))
}

// The bounds of re-opening a token: after a failed attempt, the next one
// waits reopenMin, doubling up to reopenMax, so that requests arriving
// while a token is gone fail at once instead of each trying it.
const (
	reopenMin = time.Second
	reopenMax = 30 * time.Second
)

// errSignerClosed is returned by a token signer after CA.Close.
var errSignerClosed = errors.New("the CA key's token session was closed with the CA")

// tokenSigner is the CA key in a PKCS#11 token. It signs through the
// session it holds; when the token says that the session or the key's
// handle is gone (lost), it closes the session, opens the token again,
// logs in, finds the key again (open, which checks that it is the CA
// certificate's) and signs once more, all within the call that found
// the loss. At most one re-opening per call, and after a failed one none
// before its backoff has passed. It keeps the PIN for that, as crypto11
// keeps it for its own session pool. Safe for concurrent use: signatures
// share the session, a re-opening waits for them.
type tokenSigner struct {
	name string // the token, for messages
	pub  crypto.PublicKey
	open func() (p11Token, p11Key, error)
	lost func(error) bool
	now  func() time.Time

	mu      sync.RWMutex // signatures hold it shared, a re-opening exclusive
	tok     p11Token     // nil while the token could not be opened
	key     p11Key
	gen     uint64 // counts re-openings, so that one loss is re-opened once
	closed  bool
	lostErr error         // the loss that made the key unusable
	openErr error         // why the last re-opening failed
	backoff time.Duration // the wait after the last failed re-opening
	nextTry time.Time     // no re-opening before this

	err     atomic.Pointer[error] // Err
	reopens atomic.Uint64
	log     atomic.Pointer[func(string, ...string)]
}

func newTokenSigner(name string, tok p11Token, key p11Key, open func() (p11Token, p11Key, error), lost func(error) bool, now func() time.Time) *tokenSigner {
	return &tokenSigner{name: name, pub: key.Public(), tok: tok, key: key, open: open, lost: lost, now: now}
}

func (s *tokenSigner) Public() crypto.PublicKey { return s.pub }

// Sign signs digest with the key in the token, opening it again if need
// be (see tokenSigner).
func (s *tokenSigner) Sign(rand io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	var sig []byte
	err := s.use(func(k p11Key) (err error) {
		sig, err = k.Sign(rand, digest, opts)
		return err
	})
	return sig, err
}

// Check implements SignerStatus.
func (s *tokenSigner) Check() error {
	s.use(func(k p11Key) error {
		_, err := k.info()
		return err
	})
	return s.Err()
}

// Err implements SignerStatus.
func (s *tokenSigner) Err() error {
	if e := s.err.Load(); e != nil {
		return *e
	}
	return nil
}

// Reopens implements SignerStatus.
func (s *tokenSigner) Reopens() uint64 { return s.reopens.Load() }

// SetLog implements SignerStatus.
func (s *tokenSigner) SetLog(f func(event string, kv ...string)) { s.log.Store(&f) }

func (s *tokenSigner) event(event string, kv ...string) {
	if f := s.log.Load(); f != nil && *f != nil {
		(*f)(event, kv...)
	}
}

// use runs op with the key, and when the session or the key is gone,
// opens the token again and runs op once more. Err follows the outcome;
// an error of op that is no loss (a bad argument) leaves it as it was.
func (s *tokenSigner) use(op func(p11Key) error) error {
	gen, err, gone := s.attempt(op)
	if gone {
		if err = s.reopen(gen, err); err == nil {
			_, err, gone = s.attempt(op)
		}
	}
	switch {
	case err == nil:
		s.err.Store(nil)
	case gone || errors.Is(err, errSignerClosed):
		s.err.Store(&err)
	}
	return err
}

// attempt runs op under the read lock; gone tells that opening the token
// again may help (op failed for a lost session or handle, or the token
// could not be opened last time). gen is the session op ran on.
func (s *tokenSigner) attempt(op func(p11Key) error) (gen uint64, err error, gone bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	switch {
	case s.closed:
		return s.gen, errSignerClosed, false
	case s.key == nil:
		return s.gen, s.openErr, true
	}
	err = op(s.key)
	return s.gen, err, err != nil && s.lost(err)
}

// reopen closes the session of generation gen and opens the token again,
// unless another call did since, or a failed attempt's backoff has not
// passed (then it returns that attempt's error).
func (s *tokenSigner) reopen(gen uint64, cause error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return errSignerClosed
	case s.gen != gen:
		return nil // re-opened meanwhile: use that session
	}
	now := s.now()
	if s.Err() == nil {
		s.backoff = 0 // it signed until now: a new loss, tried at once
	} else if now.Before(s.nextTry) {
		if s.openErr != nil {
			return s.openErr
		}
		return fmt.Errorf("the CA key in %s is unusable: %w", s.name, cause)
	}
	s.gen++
	if s.key != nil {
		s.lostErr = cause
		s.event("ca-key-unusable", "error", cause.Error(), "action", "opening the token again")
		// Closed first: a module that keeps one state per process (such
		// as SoftHSM2) logs in again only once the old session is gone.
		s.tok.close()
		s.tok, s.key = nil, nil
	}
	// Even a re-opening that works waits reopenMin before the next, in
	// case the key it finds fails again at once.
	s.backoff = min(max(2*s.backoff, reopenMin), reopenMax)
	s.nextTry = now.Add(s.backoff)
	tok, key, err := s.open()
	if err != nil {
		s.openErr = fmt.Errorf("the CA key in %s is unusable (%v), and opening the token again failed: %w", s.name, s.lostErr, err)
		s.event("ca-key-reopen-failed", "error", err.Error(), "retry_in", s.backoff.String())
		return s.openErr
	}
	s.tok, s.key, s.openErr = tok, key, nil
	s.reopens.Add(1)
	s.event("ca-key-reopened", "token", s.name)
	return nil
}

// close ends the session for good (CA.Close).
func (s *tokenSigner) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.tok == nil {
		return nil
	}
	err := s.tok.close()
	s.tok, s.key = nil, nil
	return err
}
