package ca

import (
	"crypto/x509"
	"testing"
	"time"
)

// Apple refuses TLS server certificates whose notBefore to notAfter spans
// more than 825 days (support.apple.com/HT210176); the backdate of notBefore
// counts towards it.
func TestServerLifetimeWithinAppleLimit(t *testing.T) {
	const limit = 825 * 24 * time.Hour
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Now: fixedClock(now.Add(-time.Hour))})
	c.Now = fixedClock(now)
	tests := []struct {
		name     string
		validity time.Duration
		issue    func(Request) (*x509.Certificate, error)
	}{
		{"issue default", 0, func(r Request) (*x509.Certificate, error) {
			is, err := c.Issue(signer, r)
			if err != nil {
				return nil, err
			}
			return is.Cert, nil
		}},
		{"issue 825d", limit, func(r Request) (*x509.Certificate, error) {
			r.Force = true
			is, err := c.Issue(signer, r)
			if err != nil {
				return nil, err
			}
			return is.Cert, nil
		}},
		{"self-signed default", 0, func(r Request) (*x509.Certificate, error) {
			cert, _, err := SelfSigned(r, now)
			return cert, err
		}},
		{"self-signed 825d", limit, func(r Request) (*x509.Certificate, error) {
			cert, _, err := SelfSigned(r, now)
			return cert, err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert, err := tt.issue(Request{Name: "www.example.com", Profile: Server, Validity: tt.validity})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := cert.NotBefore, now.Add(-Backdate); !got.Equal(want) {
				t.Errorf("NotBefore = %v; want %v", got, want)
			}
			if got := cert.NotAfter.Sub(cert.NotBefore); got > limit {
				t.Errorf("notAfter - notBefore = %v; want at most %v", got, limit)
			}
			if got, want := cert.NotAfter, now.Add(-Backdate).Add(limit); !got.Equal(want) {
				t.Errorf("NotAfter = %v; want %v, the full lifetime from notBefore", got, want)
			}
		})
	}
}
