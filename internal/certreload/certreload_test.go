package certreload

import (
	"crypto/tls"
	"errors"
	"testing"
	"time"
)

// served returns the first byte of the certificate GetCertificate gives,
// which the loads of these tests number.
func served(t *testing.T, c *Cert) byte {
	t.Helper()
	cert, err := c.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return cert.Certificate[0][0]
}

// loader numbers the certificates it loads from 1, or fails with err.
type loader struct {
	n   int
	err error
}

func (l *loader) load() (tls.Certificate, error) {
	if l.err != nil {
		return tls.Certificate{}, l.err
	}
	l.n++
	return tls.Certificate{Certificate: [][]byte{{byte(l.n)}}}, nil
}

// With a MaxAge the certificate is loaded again once it is that old, or
// after Expire; a failed load keeps the last good one and is told once.
func TestMaxAgeAndExpire(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	l := &loader{}
	var told []error
	c, err := New(l.load, Options{MaxAge: time.Minute, Now: func() time.Time { return now }, Failed: func(err error) { told = append(told, err) }})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		advance time.Duration
		expire  bool
		fail    bool
		want    byte
	}{
		{"fresh", 59 * time.Second, false, false, 1},
		{"a minute old", time.Second, false, false, 2},
		{"expired", 0, true, false, 3},
		{"failing keeps the last", time.Minute, false, true, 3},
		{"failing again is told once", time.Minute, false, true, 3},
		{"recovered", time.Minute, false, false, 4},
		{"the clock went back", -time.Hour, false, false, 5},
	}
	for _, st := range steps {
		now = now.Add(st.advance)
		l.err = nil
		if st.fail {
			l.err = errors.New("no valid server certificate")
		}
		if st.expire {
			c.Expire()
		}
		if got := served(t, c); got != st.want {
			t.Errorf("%s: served certificate %d; want %d", st.name, got, st.want)
		}
	}
	if len(told) != 1 || told[0].Error() != "no valid server certificate" {
		t.Errorf("Failed told %v; want the failure once", told)
	}
}

// Without a MaxAge only Reload loads; a failed Reload returns its error
// and keeps the last good certificate; a failed first load fails New.
func TestReloadKeepsTheLastGood(t *testing.T) {
	l := &loader{}
	c, err := New(l.load, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Expire() // still loads: Expire asks for one
	if got := served(t, c); got != 2 {
		t.Errorf("after Expire: served %d; want 2", got)
	}
	for range 3 {
		served(t, c)
	}
	if l.n != 2 {
		t.Errorf("loads = %d; want 2, none by GetCertificate without MaxAge", l.n)
	}
	l.err = errors.New("bad key")
	if err := c.Reload(); err == nil || err.Error() != "bad key" {
		t.Errorf("Reload() = %v; want the load's error", err)
	}
	if got := served(t, c); got != 2 {
		t.Errorf("after a failed Reload: served %d; want 2 kept", got)
	}
	l.err = nil
	if err := c.Reload(); err != nil || served(t, c) != 3 {
		t.Errorf("Reload() = %v, served %d; want 3", err, served(t, c))
	}
	l.err = errors.New("bad key")
	if _, err := New(l.load, Options{}); err == nil {
		t.Error("New() with a failing load succeeded")
	}
}

// A load runs outside the lock of the certificate held: while one
// handshake waits for the load it started, the others get the certificate
// held at once.
func TestHandshakesDoNotWaitForALoad(t *testing.T) {
	release := make(chan struct{})
	n := 0
	load := func() (tls.Certificate, error) {
		n++
		if n > 1 {
			<-release
		}
		return tls.Certificate{Certificate: [][]byte{{byte(n)}}}, nil
	}
	c, err := New(load, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Expire()
	first := make(chan byte)
	go func() {
		cert, _ := c.GetCertificate(nil)
		first <- cert.Certificate[0][0]
	}()
	// The first handshake claims the load; wait until it has.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		claimed := !c.expired
		c.mu.Unlock()
		if claimed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the load was not claimed within 10s")
		}
	}
	done := make(chan byte)
	go func() {
		cert, _ := c.GetCertificate(nil)
		done <- cert.Certificate[0][0]
	}()
	select {
	case got := <-done:
		if got != 1 {
			t.Errorf("during the load: served %d; want 1, the certificate held", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a handshake waited for another's load")
	}
	close(release)
	if got := <-first; got != 2 {
		t.Errorf("the handshake that loaded got %d; want 2", got)
	}
}
