package ca

import (
	"crypto"
	"math/big"
	"os"
	"strings"
	"testing"

	"minica/revoke"
)

func publishedSerials(t *testing.T, c *CA) map[string]string {
	t.Helper()
	crl, err := c.LoadCRL()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for e := range crl.Entries() {
		out[SerialHex(e.Serial)] = e.Reason.String()
	}
	return out
}

// TestRevocationLogDrivesTheCRL: the CRL comes from the revocation log, a
// lifted hold leaves it, and check reconciles records with the log after a
// crash at any point of a revocation.
func TestRevocationLogDrivesTheCRL(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	serial := func(name string) *big.Int {
		is, err := c.Issue(signer, Request{Name: name, Profile: Client})
		if err != nil {
			t.Fatal(err)
		}
		return is.Cert.SerialNumber
	}
	alice, bob, carol, dave := serial("alice"), serial("bob"), serial("carol"), serial("dave")
	for _, r := range []struct {
		s      *big.Int
		reason revoke.Reason
	}{{alice, revoke.KeyCompromise}, {bob, revoke.CertificateHold}, {bob, revoke.RemoveFromCRL}, {carol, revoke.CertificateHold}} {
		if _, err := c.Revoke(r.s, r.reason); err != nil {
			t.Fatalf("Revoke(%x, %s): %v", r.s, r.reason, err)
		}
	}
	if _, err := c.PublishCRL(signer, 0); err != nil {
		t.Fatal(err)
	}
	got := publishedSerials(t, c)
	want := map[string]string{SerialHex(alice): "keyCompromise", SerialHex(carol): "certificateHold"}
	if len(got) != len(want) || got[SerialHex(alice)] != want[SerialHex(alice)] || got[SerialHex(carol)] != want[SerialHex(carol)] {
		t.Fatalf("CRL lists %v; want %v", got, want)
	}

	// A crash after the log append, before the record changed: the record
	// still says valid; check makes it revoked.
	rec, _ := c.Record(alice)
	rec.Status, rec.Reason = StatusValid, ""
	if err := c.putRecord(rec); err != nil {
		t.Fatal(err)
	}
	// A revoked record whose log line was lost (e.g. a restored backup).
	rec, _ = c.Record(dave)
	rec.Status, rec.Reason, rec.RevokedAt = StatusRevoked, "superseded", c.Now().UTC()
	if err := c.putRecord(rec); err != nil {
		t.Fatal(err)
	}
	// An append cut short.
	f, err := os.OpenFile(c.Path(revlogFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"serial":"00`)
	f.Close()
	if _, err := c.PublishCRL(signer, 0); err != nil {
		t.Fatalf("PublishCRL with a torn last line: %v", err)
	}

	rep, err := c.CheckWith(CheckOptions{Signer: func() (crypto.Signer, error) { return signer, nil }})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(rep.Repaired, "\n")
	for _, want := range []string{"dropped the unfinished last line", "interrupted revocation change of alice", "added the revocation of dave"} {
		if !strings.Contains(joined, want) {
			t.Errorf("check repairs = %q; want one containing %q", rep.Repaired, want)
		}
	}
	if len(rep.Problems) > 0 {
		t.Errorf("check problems: %v", rep.Problems)
	}
	if rec, _ := c.Record(alice); rec.Status != StatusRevoked || rec.Reason != "keyCompromise" {
		t.Errorf("alice after check: %s %s; want revoked keyCompromise", rec.Status, rec.Reason)
	}
	if _, err := c.PublishCRL(signer, 0); err != nil {
		t.Fatal(err)
	}
	if got := publishedSerials(t, c); len(got) != 3 || got[SerialHex(dave)] != "superseded" {
		t.Errorf("CRL after check lists %v; want alice, carol, dave (superseded)", got)
	}
	again, err := c.Check()
	if err != nil || len(again.Repaired) != 0 {
		t.Errorf("second check repaired %v, %v; want nothing", again.Repaired, err)
	}
}
