package revoke

import "time"

// CRLState is the state of a CRL at one instant, as judged by [Freshness]. The
// string values are stable labels (crl status prints them).
type CRLState string

// The states of a CRL, from the point of view of a relying party.
const (
	// Fresh: thisUpdate <= now <= nextUpdate and more than the due-soon
	// threshold is left before nextUpdate.
	Fresh CRLState = "fresh"
	// DueSoon: still current, but nextUpdate is at most the due-soon
	// threshold away: a new CRL should be published.
	DueSoon CRLState = "due-soon"
	// Grace: past nextUpdate, by at most the grace period. A relying party
	// that allows a grace period still uses it, and warns.
	Grace CRLState = "grace"
	// Expired: past nextUpdate by more than the grace period (or at all,
	// without one). Nothing may be judged against it.
	Expired CRLState = "expired"
	// NotYetValid: now is before thisUpdate.
	NotYetValid CRLState = "not-yet-valid"
)

// Thresholds are the two limits of [Freshness].
type Thresholds struct {
	// DueSoon is how close nextUpdate may come before the CRL is DueSoon;
	// zero means half the CRL's lifetime (nextUpdate - thisUpdate), the
	// middle of its validity, when publishing again is due.
	DueSoon time.Duration
	// Grace is how long past nextUpdate the CRL is Grace rather than
	// Expired; zero (or negative) means none: Expired right after
	// nextUpdate.
	Grace time.Duration
}

// Freshness judges a CRL with the given thisUpdate and nextUpdate at now. Both
// instants themselves belong to the CRL's validity (RFC 5280: current
// through nextUpdate). In order: before thisUpdate it is NotYetValid; after
// nextUpdate it is Grace through nextUpdate + t.Grace, then Expired; with at
// most t.DueSoon (default: half the lifetime) left it is DueSoon; else
// Fresh. It is the one freshness rule of minica: `minica crl` and its
// warnings, `minica crl status`, the proxy, its health endpoint and the
// client-certificate judge ([Judge]) all call it.
func Freshness(thisUpdate, nextUpdate time.Time, t Thresholds, now time.Time) CRLState {
	switch {
	case now.Before(thisUpdate):
		return NotYetValid
	case now.After(nextUpdate):
		if t.Grace > 0 && !now.After(nextUpdate.Add(t.Grace)) {
			return Grace
		}
		return Expired
	}
	due := t.DueSoon
	if due <= 0 {
		due = nextUpdate.Sub(thisUpdate) / 2
	}
	if nextUpdate.Sub(now) <= due {
		return DueSoon
	}
	return Fresh
}

// Usable reports whether a relying party may judge certificates against a
// CRL in state f: Fresh, DueSoon or Grace.
func (f CRLState) Usable() bool {
	return f == Fresh || f == DueSoon || f == Grace
}
