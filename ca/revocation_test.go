package ca

import (
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"minica/revoke"
)

func TestRevoke(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Now: fixedClock(start)})
	c.Now = fixedClock(start)
	issue := func(name string) *big.Int {
		is, err := c.Issue(signer, Request{Name: name, Profile: Client})
		if err != nil {
			t.Fatal(err)
		}
		return is.Cert.SerialNumber
	}
	alice, bob, carol := issue("alice"), issue("bob"), issue("carol")

	res, err := c.Revoke(alice, revoke.KeyCompromise)
	if err != nil || res.Already || res.Lifted {
		t.Fatalf("Revoke(alice) = %+v, %v; want a fresh revocation", res, err)
	}
	c.Now = fixedClock(start.Add(time.Hour))
	res, err = c.Revoke(alice, revoke.Superseded)
	if err != nil || !res.Already {
		t.Fatalf("Revoke(alice) again = %+v, %v; want Already", res, err)
	}
	rec, err := c.Record(alice)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != StatusRevoked || !rec.RevokedAt.Equal(start) || rec.Reason != "keyCompromise" {
		t.Errorf("record after a repeat = %s %v %s; want revoked %v keyCompromise", rec.Status, rec.RevokedAt, rec.Reason, start)
	}

	// A hold can be lifted, or made final keeping its time.
	if _, err := c.Revoke(bob, revoke.CertificateHold); err != nil {
		t.Fatal(err)
	}
	if res, err = c.Revoke(bob, revoke.RemoveFromCRL); err != nil || !res.Lifted || res.Record.Status != StatusValid {
		t.Fatalf("Revoke(bob, removeFromCRL) = %+v, %v; want lifted", res, err)
	}
	if _, err := c.Revoke(carol, revoke.CertificateHold); err != nil {
		t.Fatal(err)
	}
	c.Now = fixedClock(start.Add(2 * time.Hour))
	if res, err = c.Revoke(carol, revoke.KeyCompromise); err != nil || res.Already || res.Record.Reason != "keyCompromise" ||
		!res.Record.RevokedAt.Equal(start.Add(time.Hour)) {
		t.Fatalf("Revoke(carol on hold, keyCompromise) = %+v, %v; want final at the hold time", res.Record, err)
	}

	tests := []struct {
		name    string
		serial  *big.Int
		reason  revoke.Reason
		wantIs  error
		wantErr string
	}{
		{"unknown serial", big.NewInt(0x5f3c), revoke.KeyCompromise, ErrNotFound,
			"serial 00000000000000000000000000005f3c: no such certificate"},
		{"removeFromCRL on a revoked certificate", alice, revoke.RemoveFromCRL, ErrNotOnHold,
			"removeFromCRL only lifts a certificateHold"},
		{"removeFromCRL on a valid certificate", bob, revoke.RemoveFromCRL, ErrNotOnHold,
			"removeFromCRL only lifts a certificateHold"},
		{"reason 7", bob, revoke.Reason(7), nil, "invalid revocation reason code 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Revoke(tt.serial, tt.reason)
			if err == nil || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Revoke() error = %v; want %q", err, tt.wantErr)
			}
		})
	}
}
