package ca

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/internal/certlint"
	"minica/revoke"
)

// deltaCA is a CA that signs delta CRLs from the first entry, with a
// complete CRL published, and n client certificates.
func deltaCA(t *testing.T, d DeltaSettings, n int) (*CA, []*Issued) {
	t.Helper()
	c, signer := newTestCA(t, InitOptions{})
	if err := c.SetDeltaSettings(d); err != nil {
		t.Fatal(err)
	}
	var out []*Issued
	for i := range n {
		is, err := c.Issue(signer, Request{Name: "client" + string(rune('a'+i)), Profile: Client})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, is)
	}
	if _, err := c.PublishCRL(signer, 0); err != nil {
		t.Fatal(err)
	}
	return c, out
}

// revokeAndPublish revokes is with reason and publishes the change.
func revokeAndPublish(t *testing.T, c *CA, is *Issued, reason revoke.Reason) *CRLInfo {
	t.Helper()
	res, err := c.Revoke(is.Cert.SerialNumber, reason)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := c.LoadSigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.PublishRevocations(signer, res.ChangedRecords())
	if err != nil {
		t.Fatalf("PublishRevocations: %v", err)
	}
	return info
}

// TestPublishRevocationsSignsDeltas: with deltas on, a complete CRL is
// followed by an empty delta against it; each revocation then signs a
// delta against that base, listing every change since it (revocations,
// and a lifted hold as removeFromCRL), leaves crl.der as it was, and
// what the CA reads as published (LoadCRL) lists exactly the revoked.
func TestPublishRevocationsSignsDeltas(t *testing.T) {
	c, leaves := deltaCA(t, DeltaSettings{From: -1}, 3)
	base, err := c.DeltaCRL()
	if err != nil {
		t.Fatalf("DeltaCRL after PublishCRL: %v; want an empty delta", err)
	}
	complete, err := os.ReadFile(filepath.Join(c.Dir().Path(), CRLDERFile))
	if err != nil {
		t.Fatal(err)
	}
	baseNumber := base.DeltaBase()
	if base.Len() != 0 || base.Number().Cmp(baseNumber) <= 0 {
		t.Fatalf("first delta: %d entries, number %s, base %s; want 0 entries above its base", base.Len(), base.Number(), baseNumber)
	}

	info := revokeAndPublish(t, c, leaves[0], revoke.KeyCompromise)
	if !info.Delta || info.Base.Cmp(baseNumber) != 0 || info.Entries != 1 {
		t.Fatalf("revocation published %+v; want a delta of 1 entry against %s", info, baseNumber)
	}
	revokeAndPublish(t, c, leaves[1], revoke.CertificateHold)
	info = revokeAndPublish(t, c, leaves[1], revoke.RemoveFromCRL)
	if !info.Delta || info.Entries != 2 {
		t.Fatalf("third publication %+v; want a delta of 2 entries (a revocation, a lifted hold)", info)
	}

	now, err := os.ReadFile(filepath.Join(c.Dir().Path(), CRLDERFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(now, complete) {
		t.Errorf("crl.der changed on a revocation that signs a delta")
	}
	delta, err := c.DeltaCRL()
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := delta.Lookup(leaves[1].Cert.SerialNumber); !ok || e.Reason != revoke.RemoveFromCRL {
		// Lookup on a delta alone shows removeFromCRL as listed.
		t.Errorf("delta lists the lifted hold as %+v, %v; want removeFromCRL", e, ok)
	}
	published, err := c.LoadCRL()
	if err != nil {
		t.Fatal(err)
	}
	if published.Number().Cmp(delta.Number()) != 0 || published.Len() != 1 {
		t.Errorf("LoadCRL: number %s with %d revoked; want the delta's number %s with 1", published.Number(), published.Len(), delta.Number())
	}
	for i, want := range []bool{true, false, false} {
		if got := published.IsRevoked(leaves[i].Cert.SerialNumber); got != want {
			t.Errorf("client %d revoked = %v; want %v", i, got, want)
		}
	}
	if un, err := c.Unpublished(published); err != nil || len(un) != 0 {
		t.Errorf("Unpublished = %v, %v; want none", un, err)
	}
	der, err := os.ReadFile(filepath.Join(c.Dir().Path(), DeltaCRLDERFile))
	if err != nil {
		t.Fatal(err)
	}
	certlint.RevocationList(t, der)
}

// TestPublishRevocationsFallsBack: a complete CRL is signed instead of a
// delta when deltas are off, below From, past MaxEntries, when the base is
// older than FullEvery, and when no delta is the last CRL signed.
func TestPublishRevocationsFallsBack(t *testing.T) {
	tests := []struct {
		name  string
		d     DeltaSettings
		setup func(t *testing.T, c *CA)
	}{
		{name: "off", d: DeltaSettings{From: -1, Off: true}},
		{name: "below from", d: DeltaSettings{}},
		{name: "past max entries", d: DeltaSettings{From: -1, MaxEntries: 1}, setup: func(t *testing.T, c *CA) {
			revokeAndPublish(t, c, mustIssue(t, c, "first"), revoke.KeyCompromise)
		}},
		{name: "base too old", d: DeltaSettings{From: -1, FullEvery: Duration(time.Hour)}, setup: func(t *testing.T, c *CA) {
			later := time.Now().Add(2 * time.Hour)
			c.Now = func() time.Time { return later }
		}},
		{name: "number reserved since", d: DeltaSettings{From: -1}, setup: func(t *testing.T, c *CA) {
			if _, err := c.db.NextCRLNumber(c.Now()); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, leaves := deltaCA(t, tt.d, 1)
			if tt.setup != nil {
				tt.setup(t, c)
			}
			info := revokeAndPublish(t, c, leaves[0], revoke.KeyCompromise)
			if info.Delta {
				t.Fatalf("published a delta CRL %s; want a complete CRL", info.Number)
			}
			crl, err := c.LoadCRL()
			if err != nil || !crl.IsRevoked(leaves[0].Cert.SerialNumber) {
				t.Fatalf("LoadCRL = %v; want the revocation listed", err)
			}
			_, err = c.DeltaCRL()
			if wantDelta := !tt.d.Off && tt.d.From < 0; (err == nil) != wantDelta {
				t.Errorf("DeltaCRL after the complete CRL: %v; want a new empty delta: %v", err, wantDelta)
			}
		})
	}
}

// mustIssue issues a client certificate named name.
func mustIssue(t *testing.T, c *CA, name string) *Issued {
	t.Helper()
	signer, err := c.LoadSigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	is, err := c.Issue(signer, Request{Name: name, Profile: Client})
	if err != nil {
		t.Fatal(err)
	}
	return is
}

// TestDeltaMissedRevocationIsUnpublished: a revocation recorded and never
// published (an interrupted revoke) is missing from the next delta, which
// lists only the changes it is given; Unpublished names it, so that serve
// and check publish a complete CRL that lists it.
func TestDeltaMissedRevocationIsUnpublished(t *testing.T) {
	c, leaves := deltaCA(t, DeltaSettings{From: -1}, 2)
	if _, err := c.Revoke(leaves[0].Cert.SerialNumber, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	revokeAndPublish(t, c, leaves[1], revoke.KeyCompromise)
	crl, err := c.LoadCRL()
	if err != nil {
		t.Fatal(err)
	}
	un, err := c.Unpublished(crl)
	if err != nil || len(un) != 1 || un[0] != SerialHex(leaves[0].Cert.SerialNumber) {
		t.Fatalf("Unpublished = %v, %v; want the serial of the revocation never published", un, err)
	}
}

// TestSetDeltaSettingsRefuses: bad settings change nothing.
func TestSetDeltaSettingsRefuses(t *testing.T) {
	c, _ := newTestCA(t, InitOptions{})
	for _, d := range []DeltaSettings{{From: -2}, {MaxEntries: -1}, {FullEvery: -1}, {URL: "ftp://x/crl"}} {
		if err := c.SetDeltaSettings(d); err == nil {
			t.Errorf("SetDeltaSettings(%+v) = nil; want an error", d)
		}
	}
	if c.Settings.DeltaCRL != (DeltaSettings{}) {
		t.Errorf("settings changed to %+v", c.Settings.DeltaCRL)
	}
}

// TestCheckTakesTheDelta: Check finds nothing unpublished when a delta CRL
// lists the revocation that the complete CRL lacks.
func TestCheckTakesTheDelta(t *testing.T) {
	c, leaves := deltaCA(t, DeltaSettings{From: -1}, 1)
	revokeAndPublish(t, c, leaves[0], revoke.KeyCompromise)
	rep, err := c.Check()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 || len(rep.Repaired) != 0 {
		t.Errorf("Check: problems %q, repaired %q; want none", rep.Problems, rep.Repaired)
	}
}

// A complete CRL whose empty delta could not be written (killed after
// db/crl-delta, before its published copy) is published all the same, and
// the error says the delta is not; check rewrites the copy, and the next
// revocation signs a delta against that complete CRL.
func TestPublishCRLDeltaKilled(t *testing.T) {
	c, leaves := deltaCA(t, DeltaSettings{From: -1}, 1)
	signer, err := c.LoadSigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	c.crashAfter = func(file string) error {
		if file == DeltaCRLPEMFile {
			return errKilled
		}
		return nil
	}
	_, err = c.PublishCRL(signer, 0)
	c.crashAfter = nil
	if !errors.Is(err, errKilled) || !strings.Contains(err.Error(), "is published, but its delta CRL is not") {
		t.Fatalf("PublishCRL killed at the delta = %v; want the kill, saying the CRL is published and its delta not", err)
	}
	complete, err := c.LoadCRL()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Check()
	if err != nil || len(rep.Problems) != 0 || len(rep.Repaired) != 1 || !strings.Contains(rep.Repaired[0], "delta") {
		t.Fatalf("Check = %v, problems %q, repaired %q; want the delta's copy repaired", err, rep.Problems, rep.Repaired)
	}
	info := revokeAndPublish(t, c, leaves[0], revoke.KeyCompromise)
	if !info.Delta || info.Base.Cmp(complete.Complete().Number()) != 0 {
		t.Errorf("the next revocation published %+v; want a delta against %s", info, complete.Complete().Number())
	}
}
