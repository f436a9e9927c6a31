package main

import (
	"bytes"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"
)

// serve's HTTPS certificate is loaded again once a minute old or after
// SIGHUP (Expire); a failed load keeps the last good one and warns once.
func TestServeCert(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	loads, fail := 0, false
	load := func() (tls.Certificate, error) {
		if fail {
			return tls.Certificate{}, errors.New("no valid server certificate")
		}
		loads++
		return tls.Certificate{Certificate: [][]byte{{byte(loads)}}}, nil
	}
	var log bytes.Buffer
	r, err := newServeCert(load, func() time.Time { return now }, &log)
	if err != nil {
		t.Fatal(err)
	}
	served := func() byte {
		c, err := r.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Certificate[0][0]
	}
	steps := []struct {
		name    string
		advance time.Duration
		force   bool
		fail    bool
		want    byte
	}{
		{"fresh", 59 * time.Second, false, false, 1},
		{"a minute old", time.Second, false, false, 2},
		{"forced", 0, true, false, 3},
		{"failing keeps the last", time.Minute, false, true, 3},
		{"failing again warns once", time.Minute, false, true, 3},
		{"recovered", time.Minute, false, false, 4},
	}
	for _, st := range steps {
		now = now.Add(st.advance)
		fail = st.fail
		if st.force {
			r.Expire()
		}
		if got := served(); got != st.want {
			t.Errorf("%s: served certificate %d; want %d", st.name, got, st.want)
		}
	}
	if n := strings.Count(log.String(), "reloading the HTTPS certificate: no valid server certificate; still serving the previous one"); n != 1 {
		t.Errorf("log holds %d warnings; want 1:\n%s", n, log.String())
	}
}
