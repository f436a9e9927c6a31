package ca

import (
	"os"
	"testing"
	"time"

	"minica/revoke"
)

// crlStatusAt loads c's CRL and judges it at now.
func crlStatusAt(t *testing.T, c *CA, now time.Time) *CRLStatus {
	t.Helper()
	c.Now = fixedClock(now)
	crl, err := c.LoadCRL()
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.CRLStatus(crl, revoke.Thresholds{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// The CA's own CRL: expired wins over unpublished, which wins over due
// soon.
func TestCRLStatusOwn(t *testing.T) {
	c, _, is := caWithClient(t, "alice")
	crl, err := c.LoadCRL()
	if err != nil {
		t.Fatal(err)
	}
	published := crl.ThisUpdate()
	check := func(name string, now time.Time, wantFresh revoke.CRLState, wantOwn CRLVerdict, wantMissing int) {
		t.Helper()
		st := crlStatusAt(t, c, now)
		if st.Freshness != wantFresh || st.Own != wantOwn || st.Verdict != wantOwn || len(st.Unpublished) != wantMissing || st.Root != nil {
			t.Errorf("%s: freshness %s, own %d, verdict %d, %d unpublished, root %v; want %s, %d, %d, %d, nil",
				name, st.Freshness, st.Own, st.Verdict, len(st.Unpublished), st.Root, wantFresh, wantOwn, wantOwn, wantMissing)
		}
	}
	check("fresh", published.Add(time.Hour), revoke.Fresh, CRLFresh, 0)
	check("due soon", published.Add(5*24*time.Hour), revoke.DueSoon, CRLDueSoon, 0)
	check("expired", published.Add(8*24*time.Hour), revoke.Expired, CRLExpired, 0)
	if _, err := c.Revoke(is.Cert.SerialNumber, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	check("unpublished", published.Add(time.Hour), revoke.Fresh, CRLUnpublished, 1)
	check("unpublished and due soon", published.Add(5*24*time.Hour), revoke.DueSoon, CRLUnpublished, 1)
	check("unpublished and expired", published.Add(8*24*time.Hour), revoke.Expired, CRLExpired, 1)
}

// An intermediate's verdict is the worse of its own CRL's and the root
// CRL's it keeps; a root CRL it cannot read is expired.
func TestCRLStatusIntermediate(t *testing.T) {
	_, inter := newHierarchy(t, Constraints{})
	signer := signerOf(t, inter)
	tests := []struct {
		name      string
		after     time.Duration // since the root CRL; the own CRL is published then
		remove    bool          // root-crl.der
		wantRoot  CRLVerdict
		wantState revoke.CRLState
	}{
		{name: "both fresh", after: time.Hour, wantRoot: CRLFresh, wantState: revoke.Fresh},
		{name: "root due soon", after: 200 * 24 * time.Hour, wantRoot: CRLDueSoon, wantState: revoke.DueSoon},
		{name: "root expired", after: 400 * 24 * time.Hour, wantRoot: CRLExpired, wantState: revoke.Expired},
		{name: "root missing", after: time.Hour, remove: true, wantRoot: CRLExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := hierNow.Add(tt.after)
			inter.Now = fixedClock(now)
			if _, err := inter.PublishCRL(signer, 0); err != nil {
				t.Fatal(err)
			}
			if tt.remove {
				if err := os.Rename(inter.Path(RootCRLDERFile), inter.Path("saved.der")); err != nil {
					t.Fatal(err)
				}
				defer os.Rename(inter.Path("saved.der"), inter.Path(RootCRLDERFile))
			}
			st := crlStatusAt(t, inter, now.Add(time.Minute))
			if st.Own != CRLFresh || st.Root == nil {
				t.Fatalf("own %d, root %v; want fresh and the root's state", st.Own, st.Root)
			}
			if st.Root.Verdict != tt.wantRoot || st.Verdict != tt.wantRoot || st.Root.Freshness != tt.wantState || (st.Root.CRL == nil) != tt.remove || (st.Root.Err != nil) != tt.remove {
				t.Errorf("root verdict %d (%s, err %v), verdict %d; want %d (%s)", st.Root.Verdict, st.Root.Freshness, st.Root.Err, st.Verdict, tt.wantRoot, tt.wantState)
			}
		})
	}
}
