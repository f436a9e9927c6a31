package ca

// The state of sign-in (serve/signin) kept in the store, so that every
// serve replica sees it: the sign-ins under way (between the redirect to
// the identity provider and its callback) and the sessions of the people
// who signed in. Only hashes of their secrets are keys: the store never
// holds a state or a session cookie that would open them.

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"minica/ca/store"
)

// Object kinds of sign-in: a sign-in under way by its state's hash, the
// mark that its state was used (same ID), a session by its cookie's hash.
const (
	kindSigninLogin   = "signin-login"
	kindSigninSpent   = "signin-spent"
	kindSigninSession = "signin-session"
)

// ErrSigninUnknown: no sign-in or session has this secret, or it expired,
// or (a sign-in) it was used already.
var ErrSigninUnknown = errors.New("unknown, expired or used sign-in")

// SigninLogin is a sign-in under way: what the callback of the identity
// provider must match. It is found by its state, once (TakeSigninLogin).
type SigninLogin struct {
	Nonce    string `json:"nonce"`    // the ID token's nonce
	Verifier string `json:"verifier"` // the PKCE code verifier
	// Binding is the SHA-256 (hex) of the cookie that ties the sign-in to
	// the browser that started it.
	Binding string    `json:"binding"`
	Expires time.Time `json:"expires"`
}

// SigninSession is a person who signed in: who their certificates are
// for, as the identity provider vouched and serve/signin mapped it. It
// grants nothing but the person's own pages.
type SigninSession struct {
	Email              string    `json:"email"`
	CommonName         string    `json:"cn"`
	OrganizationalUnit []string  `json:"ou,omitempty"`
	Created            time.Time `json:"created"`
	Expires            time.Time `json:"expires"`
}

// NewSigninSecret returns 256 bits from the CSPRNG in base64url: a state,
// a nonce, a cookie.
func NewSigninSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a sign-in secret: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// signinID is the store ID of a secret of kind: a SHA-256, so that the
// store does not hold what opens it.
func signinID(kind, secret string) string {
	sum := sha256.Sum256([]byte("minica " + kind + " v1\x00" + secret))
	return hex.EncodeToString(sum[:])
}

// PutSigninLogin stores the sign-in l under state, a secret from
// NewSigninSecret. A crash may lose it: the person signs in again.
func (c *CA) PutSigninLogin(state string, l *SigninLogin) error {
	data, _ := json.Marshal(l) // a SigninLogin always marshals
	if err := c.db.CreateObject(store.Object{Kind: kindSigninLogin, ID: signinID(kindSigninLogin, state), Data: data, Volatile: true}); err != nil {
		return fmt.Errorf("storing a sign-in: %w", err)
	}
	return nil
}

// TakeSigninLogin returns the sign-in of state and spends it: of every
// call for a state, in every process of the CA, one gets it; the others,
// and a state unknown or past its expiry, get ErrSigninUnknown.
func (c *CA) TakeSigninLogin(state string) (*SigninLogin, error) {
	if !ValidToken(state) {
		return nil, ErrSigninUnknown
	}
	id := signinID(kindSigninLogin, state)
	var l SigninLogin
	if err := c.readSigninObject(kindSigninLogin, id, &l); err != nil {
		return nil, err
	}
	// The mark is created once: whoever creates it spent the state.
	mark, _ := json.Marshal(struct {
		Expires time.Time `json:"expires"`
	}{l.Expires})
	err := c.db.CreateObject(store.Object{Kind: kindSigninSpent, ID: id, Data: mark})
	if errors.Is(err, fs.ErrExist) {
		return nil, ErrSigninUnknown
	}
	if err != nil {
		return nil, fmt.Errorf("spending a sign-in: %w", err)
	}
	// The mark keeps it spent: a sign-in left behind is swept.
	c.db.DeleteObject(kindSigninLogin, id)
	if !c.Now().Before(l.Expires) {
		return nil, ErrSigninUnknown
	}
	return &l, nil
}

// readSigninObject decodes the object of kind and id into v; an unknown
// one gives ErrSigninUnknown.
func (c *CA) readSigninObject(kind, id string, v any) error {
	o, err := c.db.Object(kind, id)
	if errors.Is(err, fs.ErrNotExist) {
		return ErrSigninUnknown
	}
	if err != nil {
		return fmt.Errorf("reading a sign-in: %w", err)
	}
	if err := json.Unmarshal(o.Data, v); err != nil {
		return fmt.Errorf("reading a sign-in: %s %s does not decode: %w", kind, id, err)
	}
	return nil
}

// CreateSigninSession stores s and returns the secret that finds it (the
// session cookie), which exists nowhere else. A crash may lose it: the
// person signs in again.
func (c *CA) CreateSigninSession(s *SigninSession) (string, error) {
	token, err := NewSigninSecret()
	if err != nil {
		return "", err
	}
	data, _ := json.Marshal(s) // a SigninSession always marshals
	if err := c.db.CreateObject(store.Object{Kind: kindSigninSession, ID: signinID(kindSigninSession, token), Data: data, Volatile: true}); err != nil {
		return "", fmt.Errorf("storing a sign-in session: %w", err)
	}
	return token, nil
}

// SigninSession returns the session of token; an unknown or expired one
// gives ErrSigninUnknown.
func (c *CA) SigninSession(token string) (*SigninSession, error) {
	if !ValidToken(token) {
		return nil, ErrSigninUnknown
	}
	var s SigninSession
	if err := c.readSigninObject(kindSigninSession, signinID(kindSigninSession, token), &s); err != nil {
		return nil, err
	}
	if !c.Now().Before(s.Expires) {
		return nil, ErrSigninUnknown
	}
	return &s, nil
}

// EndSigninSession removes the session of token (signing out); an
// unknown one is not an error.
func (c *CA) EndSigninSession(token string) error {
	if !ValidToken(token) {
		return nil
	}
	return c.db.DeleteObject(kindSigninSession, signinID(kindSigninSession, token))
}

// SweepSignin removes the sign-ins, their marks and the sessions that
// expired before now, and returns how many it removed. Any process may
// run it at any time.
func (c *CA) SweepSignin() (int, error) {
	now := c.Now()
	n := 0
	for _, kind := range []string{kindSigninLogin, kindSigninSpent, kindSigninSession} {
		for o, err := range c.db.Objects(kind) {
			if err != nil {
				return n, fmt.Errorf("sweeping sign-ins: %w", err)
			}
			var v struct {
				Expires time.Time `json:"expires"`
			}
			// One that does not decode is no one's: it goes too.
			if json.Unmarshal(o.Data, &v) == nil && now.Before(v.Expires) {
				continue
			}
			if err := c.db.DeleteObject(kind, o.ID); err != nil {
				return n, fmt.Errorf("sweeping sign-ins: %w", err)
			}
			n++
		}
	}
	return n, nil
}

// endSigninSessions removes every session that match selects, and one
// that does not decode (no page would accept it), and returns how many
// sessions of match it removed.
func (c *CA) endSigninSessions(match func(*SigninSession) bool) (int, error) {
	n := 0
	for o, err := range c.db.Objects(kindSigninSession) {
		if err != nil {
			return n, fmt.Errorf("reading sign-in sessions: %w", err)
		}
		var s SigninSession
		decoded := json.Unmarshal(o.Data, &s) == nil
		if decoded && !match(&s) {
			continue
		}
		if err := c.db.DeleteObject(kindSigninSession, o.ID); err != nil {
			return n, fmt.Errorf("ending a sign-in session: %w", err)
		}
		if decoded {
			n++
		}
	}
	return n, nil
}
