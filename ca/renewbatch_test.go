package ca

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"minica/revoke"
)

func TestPlanAndRenewBatch(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Validity: 365 * 24 * time.Hour, Now: fixedClock(start)})
	c.Now = fixedClock(start.Add(time.Hour))
	issue := func(name string, validity time.Duration) *Record {
		t.Helper()
		is, err := c.Issue(signer, Request{Name: name, Profile: Client, Validity: validity, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		return is.Record
	}
	due1 := issue("a", 10*24*time.Hour)
	due2 := issue("b", 20*24*time.Hour)
	issue("later", 300*24*time.Hour)
	gone := issue("gone", 10*24*time.Hour)
	if _, err := c.RevokeRecord(gone, revoke.Superseded); err != nil {
		t.Fatal(err)
	}
	done := issue("done", 10*24*time.Hour)
	if _, err := c.Renew(signer, done, RenewOptions{Validity: 100 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	// An earlier run issued this one's successor and was killed before linking it.
	cut := issue("cut", 10*24*time.Hour)
	req, err := c.RenewalRequest(cut, RenewOptions{Validity: 100 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cutSucc, err := c.Issue(signer, req)
	if err != nil {
		t.Fatal(err)
	}
	// ... before moving the current.* links, too.
	if err := c.linkCurrent(cut); err != nil {
		t.Fatal(err)
	}
	// A certificate from sign is left to its holder.
	signed, err := c.Issue(signer, Request{Name: "ext", Profile: Client, Validity: 10 * 24 * time.Hour, PublicKey: cutSucc.Key.Public()})
	if err != nil {
		t.Fatal(err)
	}

	plan, err := c.PlanRenewals(30*24*time.Hour, RenewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{due1.Serial, due2.Serial}
	slices.Sort(want)
	if !slices.Equal(plan.Due, want) || len(plan.Refused) != 0 || plan.Records != 9 {
		t.Fatalf("plan = %+v; want due %v of 9 records", plan, want)
	}
	if len(plan.NoKey) != 1 || plan.NoKey[0].Serial != signed.Record.Serial {
		t.Errorf("NoKey = %v; want the certificate from sign", plan.NoKey)
	}
	if len(plan.Resumed) != 1 || plan.Resumed[0].Serial != cutSucc.Record.Serial {
		t.Errorf("Resumed = %v; want the successor of the cut renewal", plan.Resumed)
	}
	if r, _ := c.recordHex(cut.Serial); r.RenewedBy != cutSucc.Record.Serial {
		t.Errorf("cut renewal not linked: RenewedBy = %q", r.RenewedBy)
	}
	for _, l := range currentLinks(cutSucc.Record) {
		if !c.linkCurrentOK(certDir("cut"), l[0], l[1]) {
			t.Errorf("after the plan, %s of cut does not point at its successor's %q", l[0], l[1])
		}
	}

	var got []string
	n, err := c.RenewBatch(context.Background(), signer, plan.Due, RenewOptions{}, BatchOptions{GroupSize: 1}, func(rn *Renewed) error {
		if rn.Predecessor.RenewedBy != rn.Record.Serial || rn.Record.RenewalOf != rn.Predecessor.Serial {
			t.Errorf("links of %s: %+v / %+v", rn.Record.Name, rn.Predecessor, rn.Record)
		}
		// A renewal replaces the current.* links its predecessor left.
		for _, l := range currentLinks(rn.Record) {
			if !c.linkCurrentOK(certDir(rn.Record.Name), l[0], l[1]) {
				t.Errorf("%s of %s does not point at %q", l[0], rn.Record.Name, l[1])
			}
		}
		got = append(got, rn.Predecessor.Serial)
		return nil
	})
	if err != nil || n != 2 || !slices.Equal(got, plan.Due) {
		t.Fatalf("RenewBatch = %d, %v; reported %v, want %v", n, err, got, plan.Due)
	}
	// The renewed ones are not due again (their short-lived successors are).
	again, err := c.PlanRenewals(30*24*time.Hour, RenewOptions{})
	if err != nil || slices.Contains(again.Due, due1.Serial) || slices.Contains(again.Due, due2.Serial) || len(again.Resumed) != 0 {
		t.Errorf("a second plan = %+v, %v; want neither predecessor due", again, err)
	}

	// A successor that would outlive the CA refuses the certificate, and the plan says so.
	c.Now = fixedClock(start.Add(280 * 24 * time.Hour))
	plan, err = c.PlanRenewals(30*24*time.Hour, RenewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Refused) != 1 || !errors.Is(plan.Refused[0], ErrOutlivesCA) {
		t.Fatalf("Refused = %v; want ErrOutlivesCA", plan.Refused)
	}
	var rr *RenewalRefusal
	if !errors.As(plan.Refused[0], &rr) || rr.Record == nil {
		t.Errorf("refusal %v does not name its record", plan.Refused[0])
	}
}

// A certificate that can no longer be renewed stops the batch after the
// ones before it, which are reported and linked.
func TestRenewBatchStops(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	for _, name := range []string{"a", "b", "c"} {
		if _, err := c.Issue(signer, Request{Name: name, Profile: Client, Validity: 10 * 24 * time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	plan, err := c.PlanRenewals(30*24*time.Hour, RenewOptions{})
	if err != nil || len(plan.Due) != 3 {
		t.Fatalf("plan: %v, %v", plan, err)
	}
	last, _ := c.recordHex(plan.Due[2])
	if err := c.dir.Root().Remove(last.CertPath()); err != nil {
		t.Fatal(err)
	}
	var linked []string
	n, err := c.RenewBatch(context.Background(), signer, plan.Due, RenewOptions{}, BatchOptions{GroupSize: 1}, func(rn *Renewed) error {
		if rn.Predecessor.RenewedBy != rn.Record.Serial {
			t.Errorf("%s not linked", rn.Predecessor.Serial)
		}
		linked = append(linked, rn.Predecessor.Serial)
		return nil
	})
	if n != 2 || err == nil || !strings.Contains(err.Error(), "reading certificate "+last.Serial) {
		t.Fatalf("RenewBatch = %d, %v; want 2 and the unreadable certificate", n, err)
	}
	if !slices.Equal(linked, plan.Due[:2]) {
		t.Errorf("reported %v; want %v", linked, plan.Due[:2])
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := c.RenewBatch(ctx, signer, plan.Due[2:], RenewOptions{}, BatchOptions{}, func(*Renewed) error { return nil }); n != 0 || err != nil {
		t.Errorf("a cancelled RenewBatch = %d, %v; want 0, nil", n, err)
	}
}
