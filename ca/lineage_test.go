package ca

import (
	"context"
	"crypto"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"minica/revoke"
)

func TestRevokesLine(t *testing.T) {
	want := map[revoke.Reason]bool{
		revoke.Unspecified:          false,
		revoke.KeyCompromise:        true,
		revoke.CACompromise:         true,
		revoke.AffiliationChanged:   true,
		revoke.Superseded:           false,
		revoke.CessationOfOperation: true,
		revoke.CertificateHold:      false,
		revoke.RemoveFromCRL:        false,
		revoke.PrivilegeWithdrawn:   true,
		revoke.AACompromise:         true,
	}
	for r, w := range want {
		if got := RevokesLine(r); got != w {
			t.Errorf("RevokesLine(%s) = %v; want %v", r, got, w)
		}
	}
}

// The line of a certificate on the file store: see testRevokeLine.
func TestRevokeLine(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Now: fixedClock(start.Add(-time.Hour)), FirstCRL: true})
	testRevokeLine(t, c, signer, start)
}

// testRevokeLine checks, on c's store, that revoking a certificate for a
// reason that takes its holder's access (keyCompromise) revokes every
// certificate renewed from it, however the renewal was made (Renew, as
// `minica renew`, serve and the agent do; RenewBatch, as `renew
// --expiring` does; a forced second successor), directly or through
// another renewal, and names each; that other reasons name the successors
// left valid; and that a line a crash left half revoked is completed by
// Check and by a repeated Revoke.
func testRevokeLine(t *testing.T, c *CA, signer crypto.Signer, start time.Time) {
	c.Now = fixedClock(start)
	issue := func(name string) *Record {
		t.Helper()
		is, err := c.Issue(signer, Request{Name: name, Profile: Client})
		if err != nil {
			t.Fatal(err)
		}
		return is.Record
	}
	renew := func(rec *Record, force bool) *Record {
		t.Helper()
		rn, err := c.Renew(signer, rec, RenewOptions{Force: force})
		if err != nil {
			t.Fatal(err)
		}
		return rn.Record
	}
	record := func(serial string) *Record {
		t.Helper()
		r, err := c.recordHex(serial)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	serials := func(recs []*Record) []string {
		var s []string
		for _, r := range recs {
			s = append(s, r.Serial)
		}
		return s
	}

	// alice: a renewed by b (Renew), b by c2 (RenewBatch), a again by d
	// (forced second successor); e is another certificate of alice that
	// renews nothing.
	a := issue("alice")
	c.Now = fixedClock(start.Add(time.Minute))
	b := renew(a, false)
	c.Now = fixedClock(start.Add(2 * time.Minute))
	var c2 *Record
	if _, err := c.RenewBatch(context.Background(), signer, []string{b.Serial}, RenewOptions{}, BatchOptions{}, func(rn *Renewed) error {
		c2 = rn.Record
		return nil
	}); err != nil || c2 == nil {
		t.Fatalf("RenewBatch: %v", err)
	}
	c.Now = fixedClock(start.Add(3 * time.Minute))
	d := renew(record(a.Serial), true)
	e, err := c.Issue(signer, Request{Name: "alice", Profile: Client, Force: true})
	if err != nil {
		t.Fatal(err)
	}

	now := start.Add(time.Hour)
	c.Now = fixedClock(now)
	res, err := c.RevokeRecord(record(a.Serial), revoke.KeyCompromise)
	if err != nil || res.Already {
		t.Fatalf("RevokeRecord(a, keyCompromise) = %+v, %v; want a fresh revocation", res, err)
	}
	if got, want := serials(res.Successors), []string{b.Serial, c2.Serial, d.Serial}; !slices.Equal(got, want) {
		t.Errorf("Successors = %v; want b, c2, d %v, oldest first", got, want)
	}
	if len(res.StillValid) != 0 {
		t.Errorf("StillValid = %v; want none", serials(res.StillValid))
	}
	for _, s := range []string{a.Serial, b.Serial, c2.Serial, d.Serial} {
		r := record(s)
		if r.Status != StatusRevoked || r.Reason != "keyCompromise" || !r.RevokedAt.Equal(now) {
			t.Errorf("serial %s: %s %s at %v; want revoked keyCompromise at %v", s, r.Status, r.Reason, r.RevokedAt, now)
		}
	}
	if r := record(e.Record.Serial); r.Status != StatusValid {
		t.Errorf("e, which renews nothing, is %s; want valid", r.Status)
	}
	info, err := c.PublishCRL(signer, 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.Entries != 4 {
		t.Errorf("the CRL lists %d; want the 4 certificates of the line", info.Entries)
	}

	// Other reasons revoke the certificate alone and name the successors
	// that stay valid.
	for _, reason := range []revoke.Reason{revoke.Unspecified, revoke.Superseded, revoke.CertificateHold} {
		name := "bob-" + strings.ToLower(reason.String())
		c.Now = fixedClock(start)
		old := issue(name)
		succ := renew(old, false)
		c.Now = fixedClock(now)
		res, err := c.RevokeRecord(record(old.Serial), reason)
		if err != nil || len(res.Successors) != 0 {
			t.Fatalf("RevokeRecord(%s) = %+v, %v; want no successor revoked", reason, res, err)
		}
		if got := serials(res.StillValid); !slices.Equal(got, []string{succ.Serial}) {
			t.Errorf("%s: StillValid = %v; want %s", reason, got, succ.Serial)
		}
		if r := record(succ.Serial); r.Status != StatusValid {
			t.Errorf("%s: the successor is %s; want valid", reason, r.Status)
		}
	}

	// A line a crash left half revoked (the predecessor's revocation
	// logged, its successors' not: a power loss within the append) is
	// completed by Check, and names what it revoked.
	c.Now = fixedClock(start)
	old := issue("carol")
	succ := renew(old, false)
	c.Now = fixedClock(now)
	half := record(old.Serial)
	half.Status, half.RevokedAt, half.Reason = StatusRevoked, now, "cessationOfOperation"
	if err := c.logAndPut(half); err != nil {
		t.Fatal(err)
	}
	rep, err := c.CheckWith(CheckOptions{Signer: func() (crypto.Signer, error) { return signer, nil }})
	if err != nil {
		t.Fatal(err)
	}
	wantRepair := "revoked carol (serial " + succ.Serial + "), renewed from serial " + old.Serial + ", which is revoked (cessationOfOperation): that reason revokes the certificates renewed from it"
	if !slices.Contains(rep.Repaired, wantRepair) {
		t.Errorf("Check repaired %q; want %q", rep.Repaired, wantRepair)
	}
	if r := record(succ.Serial); r.Status != StatusRevoked || r.Reason != "cessationOfOperation" {
		t.Errorf("after Check the successor is %s %s; want revoked cessationOfOperation", r.Status, r.Reason)
	}
	crl, err := c.LoadCRL()
	if err != nil || !crl.IsRevoked(parseSerialHex(t, succ.Serial)) {
		t.Errorf("after Check the published CRL does not list the successor (%v)", err)
	}
	rep, err = c.Check()
	if err != nil || len(rep.Repaired) != 0 || len(rep.Problems) != 0 {
		t.Errorf("a second Check: %+v, %v; want nothing to do", rep, err)
	}

	// A repeated Revoke completes it too: the predecessor was revoked
	// already, its successor now.
	c.Now = fixedClock(start)
	old = issue("dave")
	succ = renew(old, false)
	c.Now = fixedClock(now)
	half = record(old.Serial)
	half.Status, half.RevokedAt, half.Reason = StatusRevoked, start, "keyCompromise"
	if err := c.logAndPut(half); err != nil {
		t.Fatal(err)
	}
	res, err = c.RevokeRecord(record(old.Serial), revoke.Unspecified)
	if err != nil || !res.Already || res.Record.Reason != "keyCompromise" {
		t.Fatalf("RevokeRecord(dave again) = %+v, %v; want already revoked for keyCompromise", res, err)
	}
	if got := serials(res.Successors); !slices.Equal(got, []string{succ.Serial}) {
		t.Errorf("Successors = %v; want the successor %s", got, succ.Serial)
	}
	if r := record(succ.Serial); r.Status != StatusRevoked || r.Reason != "keyCompromise" {
		t.Errorf("the successor is %s %s; want revoked keyCompromise", r.Status, r.Reason)
	}

	// A successor whose issuance was interrupted after its certificate
	// reached the disk (a pending record) is settled first and revoked
	// with its line, not completed later as a valid certificate.
	interrupted := func(name string) (*Record, *Record) {
		t.Helper()
		c.Now = fixedClock(start)
		old := issue(name)
		succ := renew(old, false)
		pending := record(succ.Serial)
		pending.Status = StatusPending
		if err := c.putRecord(pending); err != nil {
			t.Fatal(err)
		}
		c.Now = fixedClock(now)
		return old, succ
	}
	old, succ = interrupted("erin")
	res, err = c.RevokeRecord(record(old.Serial), revoke.PrivilegeWithdrawn)
	if err != nil {
		t.Fatal(err)
	}
	if got := serials(res.Successors); !slices.Equal(got, []string{succ.Serial}) {
		t.Errorf("Successors = %v; want the interrupted successor %s", got, succ.Serial)
	}
	if want := "completed the interrupted issuance of erin (serial " + succ.Serial + ")"; !slices.Contains(res.Finished, want) {
		t.Errorf("Finished = %q; want %q", res.Finished, want)
	}
	// Settled later (issue run again: FinishInterrupted), it joins its
	// revoked line at once.
	old, succ = interrupted("frank")
	half = record(old.Serial)
	half.Status, half.RevokedAt, half.Reason = StatusRevoked, now, "affiliationChanged"
	if err := c.logAndPut(half); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FinishInterrupted("frank"); err != nil {
		t.Fatal(err)
	}
	if r := record(succ.Serial); r.Status != StatusRevoked || r.Reason != "affiliationChanged" {
		t.Errorf("the successor completed by FinishInterrupted is %s %s; want revoked affiliationChanged", r.Status, r.Reason)
	}
}

func parseSerialHex(t *testing.T, s string) *big.Int {
	t.Helper()
	n, err := ParseSerial(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
