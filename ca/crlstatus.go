package ca

import (
	"time"

	"minica/revoke"
)

// CRLVerdict sums up a CRL for a monitor. The verdicts are ordered from
// best to worst, and a verdict of several CRLs is the worst of theirs.
type CRLVerdict int

// The verdicts, from best to worst.
const (
	// CRLFresh: nothing to do.
	CRLFresh CRLVerdict = iota
	// CRLDueSoon: the CRL is usable, and its nextUpdate is near
	// (revoke.DueSoon): publish again.
	CRLDueSoon
	// CRLUnpublished: the CRL is usable but lacks revocations of the CA.
	CRLUnpublished
	// CRLExpired: the CRL is expired, not yet valid, missing or
	// unreadable: relying parties cannot judge certificates against it.
	CRLExpired
)

// CRLStatus is the state of the CRLs a CA publishes and keeps.
type CRLStatus struct {
	// CRL is the CA's own published CRL, and Freshness its freshness.
	CRL       *revoke.CRL
	Freshness revoke.CRLState
	// Unpublished are the serials (hex) of revocations that CRL lacks.
	Unpublished []string
	// Own is the verdict of the CA's own CRL.
	Own CRLVerdict
	// Root is the root's CRL that an intermediate keeps; nil for any
	// other CA.
	Root *RootCRLStatus
	// Verdict is the worst of Own and the root CRL's.
	Verdict CRLVerdict
}

// RootCRLStatus is the state of the root's CRL that an intermediate keeps
// (see LoadRootCRL).
type RootCRLStatus struct {
	// CRL is nil when it cannot be read, and Err says why.
	CRL       *revoke.CRL
	Err       error
	Freshness revoke.CRLState
	Verdict   CRLVerdict
}

// CRLStatus judges crl, the CA's published CRL (see LoadCRL), at Now:
// its freshness under the thresholds t (revoke.Freshness), the revocations
// it lacks (Unpublished) and, on an intermediate, the freshness of the root
// CRL it keeps. An own CRL that relying parties cannot use is CRLExpired
// whatever else it lacks. The error is one of reading the revocations.
func (c *CA) CRLStatus(crl *revoke.CRL, t revoke.Thresholds) (*CRLStatus, error) {
	missing, err := c.Unpublished(crl)
	if err != nil {
		return nil, err
	}
	now := c.Now()
	st := &CRLStatus{CRL: crl, Freshness: revoke.Freshness(crl.ThisUpdate(), crl.NextUpdate(), t, now), Unpublished: missing}
	st.Own = freshnessVerdict(st.Freshness)
	if st.Own != CRLExpired && len(missing) > 0 {
		st.Own = CRLUnpublished
	}
	st.Verdict = st.Own
	if c.IsIntermediate() {
		st.Root = c.rootCRLStatus(t, now)
		st.Verdict = max(st.Verdict, st.Root.Verdict)
	}
	return st, nil
}

// rootCRLStatus judges the root CRL an intermediate keeps as CRLStatus
// judges the CA's own; one that cannot be read is CRLExpired.
func (c *CA) rootCRLStatus(t revoke.Thresholds, now time.Time) *RootCRLStatus {
	crl, err := c.LoadRootCRL()
	if err != nil {
		return &RootCRLStatus{Err: err, Verdict: CRLExpired}
	}
	fresh := revoke.Freshness(crl.ThisUpdate(), crl.NextUpdate(), t, now)
	return &RootCRLStatus{CRL: crl, Freshness: fresh, Verdict: freshnessVerdict(fresh)}
}

// freshnessVerdict is the verdict of a CRL in state f, revocations aside.
func freshnessVerdict(f revoke.CRLState) CRLVerdict {
	switch {
	case !f.Usable():
		return CRLExpired
	case f == revoke.DueSoon:
		return CRLDueSoon
	}
	return CRLFresh
}
