package ca

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSigninLoginSpentOnce(t *testing.T) {
	c, _ := newEnrollCA(t)
	other, err := openTest(c.Dir().Path()) // another replica
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	other.Now = c.Now
	state, err := NewSigninSecret()
	if err != nil {
		t.Fatal(err)
	}
	l := &SigninLogin{Nonce: "n", Verifier: "v", Binding: "b", Expires: enrollStart.Add(10 * time.Minute)}
	if err := c.PutSigninLogin(state, l); err != nil {
		t.Fatal(err)
	}
	// The store holds no state.
	filepath.WalkDir(c.Dir().Path(), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(path); strings.Contains(string(data), state) {
				t.Errorf("%s holds the state", path)
			}
		}
		return nil
	})
	// Of many takers in two processes, one gets it.
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := 0
	for i := range 8 {
		wg.Go(func() {
			h := c
			if i%2 == 1 {
				h = other
			}
			sl, err := h.TakeSigninLogin(state)
			switch {
			case err == nil:
				if *sl != *l {
					t.Errorf("TakeSigninLogin() = %+v; want %+v", sl, l)
				}
				mu.Lock()
				got++
				mu.Unlock()
			case !errors.Is(err, ErrSigninUnknown):
				t.Errorf("TakeSigninLogin(): %v", err)
			}
		})
	}
	wg.Wait()
	if got != 1 {
		t.Errorf("%d takers got the sign-in; want 1", got)
	}
	for _, bad := range []string{"", "short", state[:42] + "A"} {
		if _, err := c.TakeSigninLogin(bad); !errors.Is(err, ErrSigninUnknown) {
			t.Errorf("TakeSigninLogin(%q) error = %v; want ErrSigninUnknown", bad, err)
		}
	}
	// An expired one is refused, and spent.
	late, _ := NewSigninSecret()
	if err := c.PutSigninLogin(late, l); err != nil {
		t.Fatal(err)
	}
	c.Now = fixedClock(l.Expires)
	if _, err := c.TakeSigninLogin(late); !errors.Is(err, ErrSigninUnknown) {
		t.Errorf("TakeSigninLogin(expired) error = %v; want ErrSigninUnknown", err)
	}
}

func TestSigninSession(t *testing.T) {
	c, _ := newEnrollCA(t)
	s := &SigninSession{Email: "simon@example.com", CommonName: "Simon", Created: enrollStart, Expires: enrollStart.Add(15 * time.Minute)}
	token, err := c.CreateSigninSession(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.SigninSession(token)
	if err != nil || got.Email != s.Email || got.CommonName != "Simon" {
		t.Fatalf("SigninSession() = %+v, %v; want %+v", got, err, s)
	}
	if _, err := c.SigninSession(token[:42] + "x"); !errors.Is(err, ErrSigninUnknown) {
		t.Errorf("SigninSession(another token) error = %v; want ErrSigninUnknown", err)
	}
	// Another session, left to expire, and a sign-in left behind.
	stale, err := c.CreateSigninSession(&SigninSession{Email: "bob@example.com", Expires: enrollStart.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	left, _ := NewSigninSecret()
	if err := c.PutSigninLogin(left, &SigninLogin{Expires: enrollStart.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	c.Now = fixedClock(enrollStart.Add(2 * time.Minute))
	if _, err := c.SigninSession(stale); !errors.Is(err, ErrSigninUnknown) {
		t.Errorf("SigninSession(expired) error = %v; want ErrSigninUnknown", err)
	}
	if n, err := c.SweepSignin(); err != nil || n != 2 {
		t.Errorf("SweepSignin() = %d, %v; want 2 (the stale session and sign-in)", n, err)
	}
	if _, err := c.SigninSession(token); err != nil {
		t.Errorf("the live session was swept: %v", err)
	}
	if err := c.EndSigninSession(token); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SigninSession(token); !errors.Is(err, ErrSigninUnknown) {
		t.Errorf("SigninSession(ended) error = %v; want ErrSigninUnknown", err)
	}
}
