package ca

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Renew with MinInterval refuses a certificate that has a successor issued
// less than MinInterval ago, whichever handle (process, replica) issued
// it, and writes nothing; once the interval has passed it renews again.
func TestRenewMinInterval(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	now := start
	clock := func() time.Time { return now }
	c, signer := newTestCA(t, InitOptions{Validity: 5 * 365 * 24 * time.Hour, Now: clock})
	c.Now = clock
	old, err := c.Issue(signer, Request{Name: "web", Profile: Server, DNSNames: []string{"web.example.com"}, Validity: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// Another handle on the same directory, as a second serve would have.
	other, err := Open(c.Dir().Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.Now = clock
	opts := RenewOptions{Force: true, MinInterval: time.Minute}
	if _, err := c.Renew(signer, old.Record, opts); err != nil {
		t.Fatalf("first Renew: %v", err)
	}
	now = now.Add(20 * time.Second)
	rec, err := other.Record(old.Cert.SerialNumber)
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Renew(signer, rec, opts)
	var recent *RenewedRecentlyError
	if !errors.Is(err, ErrRenewedRecently) || !errors.As(err, &recent) || recent.Wait != 40*time.Second ||
		!strings.Contains(err.Error(), `certificate "web" (serial `+rec.Serial+`) was renewed by serial `) {
		t.Fatalf("second Renew 20s later = %v; want RenewedRecentlyError with 40s to wait", err)
	}
	if recs, _ := other.RecordsByName("web"); len(recs) != 2 {
		t.Fatalf("web has %d records after the refusal; want 2", len(recs))
	}
	now = now.Add(40 * time.Second)
	if _, err := other.Renew(signer, rec, opts); err != nil {
		t.Fatalf("Renew once the minute has passed: %v", err)
	}
	// Without MinInterval, Force renews at once, as before.
	if _, err := other.Renew(signer, rec, RenewOptions{Force: true}); err != nil {
		t.Fatalf("Renew without MinInterval: %v", err)
	}
}
