package ca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"minica/revoke"
)

func TestServerCert(t *testing.T) {
	start := time.Now().UTC()
	c, signer := newTestCA(t, InitOptions{})
	c.Now = fixedClock(start)
	issue := func(req Request) *Record {
		t.Helper()
		is, err := c.Issue(signer, req)
		if err != nil {
			t.Fatalf("Issue %s: %v", req.Name, err)
		}
		return is.Record
	}
	old := issue(Request{Name: "web", Profile: Server, DNSNames: []string{"web"}})
	c.Now = fixedClock(start.Add(time.Hour))
	newest := issue(Request{Name: "web", Profile: Server, DNSNames: []string{"web"}, Force: true})
	issue(Request{Name: "alice", Profile: Client})
	revoked := issue(Request{Name: "gone", Profile: Server, DNSNames: []string{"gone"}})
	serial, _ := ParseSerial(revoked.Serial)
	if _, err := c.Revoke(serial, revoke.Unspecified); err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	issue(Request{Name: "csr", Profile: Server, DNSNames: []string{"csr"}, PublicKey: key.Public()})

	tests := []struct {
		name, lookup string
		now          time.Time
		want         string // serial, "" for ErrNoServerCert
	}{
		{"newest of two", "web", start.Add(2 * time.Hour), newest.Serial},
		{"newest not yet valid", "web", newest.NotBefore.Add(-time.Second), old.Serial},
		{"both expired", "web", newest.NotAfter.Add(time.Second), ""},
		{"client only", "alice", start.Add(2 * time.Hour), ""},
		{"revoked", "gone", start.Add(2 * time.Hour), ""},
		{"no key", "csr", start.Add(2 * time.Hour), ""},
		{"unknown name", "nobody", start.Add(2 * time.Hour), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := c.ServerCert(tt.lookup, tt.now)
			if tt.want == "" {
				if !errors.Is(err, ErrNoServerCert) {
					t.Fatalf("ServerCert(%q) = %v, %v; want ErrNoServerCert", tt.lookup, r, err)
				}
				want := `server certificate "` + tt.lookup + `": no valid server certificate with a key`
				if err.Error() != want {
					t.Errorf("error %q; want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("ServerCert(%q): %v", tt.lookup, err)
			}
			if r.Serial != tt.want {
				t.Errorf("ServerCert(%q) = serial %s; want %s", tt.lookup, r.Serial, tt.want)
			}
		})
	}
	// The error names the newest server certificate, so that a caller can
	// say why it is not usable.
	for _, tt := range []struct {
		lookup string
		now    time.Time
		want   string // "" for none
	}{
		{"web", newest.NotAfter.Add(time.Second), newest.Serial},
		{"gone", start.Add(2 * time.Hour), revoked.Serial},
		{"alice", start.Add(2 * time.Hour), ""},
		{"nobody", start.Add(2 * time.Hour), ""},
	} {
		_, err := c.ServerCert(tt.lookup, tt.now)
		var nse *NoServerCertError
		if !errors.As(err, &nse) {
			t.Fatalf("ServerCert(%q) error = %v; want a *NoServerCertError", tt.lookup, err)
		}
		got := ""
		if nse.Newest != nil {
			got = nse.Newest.Serial
		}
		if got != tt.want {
			t.Errorf("ServerCert(%q): Newest = %q; want %q", tt.lookup, got, tt.want)
		}
	}
	if _, err := c.ServerCert("../x", start); err == nil || errors.Is(err, ErrNoServerCert) {
		t.Errorf("ServerCert of an invalid name: %v; want a name error", err)
	}
}
