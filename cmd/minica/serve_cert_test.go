package main

import (
	"bytes"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"
)

// serve's HTTPS certificate is loaded again once a minute old; a failed
// load keeps the last good one and warns once (the mechanism, Expire
// included, is internal/certreload's, tested there).
func TestServeCert(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	// What the next load gives: certificate number n, or failed.
	n, failed := byte(1), error(nil)
	var log bytes.Buffer
	r, err := newServeCert(func() (tls.Certificate, error) {
		return tls.Certificate{Certificate: [][]byte{{n}}}, failed
	}, func() time.Time { return now }, &log)
	if err != nil {
		t.Fatal(err)
	}
	servedAfter := func(d time.Duration) byte {
		now = now.Add(d)
		c, err := r.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Certificate[0][0]
	}
	n = 2
	if got := servedAfter(59 * time.Second); got != 1 {
		t.Errorf("59s old: served certificate %d; want 1", got)
	}
	if got := servedAfter(time.Second); got != 2 {
		t.Errorf("a minute old: served certificate %d; want 2", got)
	}
	n, failed = 3, errors.New("no valid server certificate")
	if a, b := servedAfter(time.Minute), servedAfter(time.Minute); a != 2 || b != 2 {
		t.Errorf("failing twice: served certificates %d, %d; want 2 kept", a, b)
	}
	if n := strings.Count(log.String(), "reloading the HTTPS certificate: no valid server certificate; still serving the previous one"); n != 1 {
		t.Errorf("log holds %d warnings; want 1:\n%s", n, log.String())
	}
}
