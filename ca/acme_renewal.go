package ca

// The renewal window of RFC 9773 for ACME certificates, and the
// operator's renew-now.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"minica/ca/store"
)

// acmeUrgentAgo is how far in the past the renewal window of a certificate
// to renew at once ends; it lasts as long again. RFC 9773 section 4.2 has
// a client pick a random moment in the window and renew at once if that
// moment has passed: a window wholly in the past makes every client renew
// at its next check, as Let's Encrypt's answer for a revoked certificate
// does. A window from now on would have it pick a moment up to minutes
// ahead, and as the window is computed anew at each check, a client that
// does not sleep until that moment (lego checks again after the
// Retry-After) would almost never reach it. An hour also absorbs a
// client's clock running behind.
const acmeUrgentAgo = time.Hour

// ACMERenewalWindow is the suggested renewal window of RFC 9773 for a
// certificate's record at now: the last third of its life by default;
// wholly in the past when the certificate or its CA was revoked, or when
// an operator asked for it (ACMERenewNow), so that a client renews at its
// next check.
//
// The default window starts two thirds into the certificate's life and
// ends at five sixths: a client picks a moment within it, and the last
// sixth is left for its retries. The urgent window is two hours ago to an
// hour ago. The CA counts as revoked when it is an intermediate
// whose root's CRL (the one LoadRootCRL reads; an unreadable one is
// ignored) lists it. A pending or void record has no window (an error).
func (c *CA) ACMERenewalWindow(rec *Record, now time.Time) (start, end time.Time, err error) {
	if rec == nil || !rec.Issued() {
		return time.Time{}, time.Time{}, fmt.Errorf("%w: no certificate was issued", ErrNotFound)
	}
	urgent, err := c.acmeRenewUrgent(rec)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	if urgent {
		end = now.UTC().Truncate(time.Second).Add(-acmeUrgentAgo)
		return end.Add(-acmeUrgentAgo), end, nil
	}
	life := rec.NotAfter.Sub(rec.NotBefore)
	return rec.NotBefore.Add(life / 3 * 2), rec.NotAfter.Add(-life / 6), nil
}

// acmeRenewUrgent tells whether rec should renew at once: revoked, its
// CA revoked, or marked by ACMERenewNow.
func (c *CA) acmeRenewUrgent(rec *Record) (bool, error) {
	if rec.Status == StatusRevoked {
		return true, nil
	}
	if c.RevokedAtRoot() {
		return true, nil
	}
	for _, id := range []string{rec.Serial, acmeRenewAll} {
		o, err := c.db.Object(kindRenew, id)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, err
		}
		var m acmeRenewMark
		if err := json.Unmarshal(o.Data, &m); err != nil {
			return false, fmt.Errorf("corrupt ACME renew-now mark %s", id)
		}
		if !rec.IssuedAt.After(m.At) {
			return true, nil
		}
	}
	return false, nil
}

// ACMERenewNow moves the renewal window of the ACME certificates of name
// (every ACME certificate when all) to now, in the store. It returns how
// many valid certificates it moved. The caller must hold the lock.
//
// An ACME certificate is one whose record names an account. The window
// moves for the certificates issued until now only: their successors get
// the default window. A name with no certificate at all gives an error
// matching ErrNotFound. The marks of certificates no longer valid are
// removed on the way.
func (c *CA) ACMERenewNow(name string, all bool, now time.Time) (int, error) {
	now = now.UTC().Truncate(time.Second)
	mark, _ := json.Marshal(acmeRenewMark{At: now})
	if err := c.pruneRenewMarks(now); err != nil {
		return 0, err
	}
	isACME := func(r *Record) bool { return r.ACMEAccount != "" && r.StatusAt(now) == StatusValid }
	if all {
		n := 0
		for r, err := range c.Records() {
			if err != nil {
				return 0, err
			}
			if isACME(r) {
				n++
			}
		}
		return n, c.db.PutObject(store.Object{Kind: kindRenew, ID: acmeRenewAll, Data: mark})
	}
	recs, err := c.RecordsByName(name)
	if err != nil {
		return 0, err
	}
	if len(recs) == 0 {
		return 0, fmt.Errorf("%w named %q", ErrNotFound, name)
	}
	n := 0
	for _, r := range recs {
		if !isACME(r) {
			continue
		}
		if err := c.db.PutObject(store.Object{Kind: kindRenew, ID: r.Serial, Data: mark}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// pruneRenewMarks removes the renew-now marks of serials whose
// certificate is no longer valid at now.
func (c *CA) pruneRenewMarks(now time.Time) error {
	var old []string
	for o, err := range c.db.Objects(kindRenew) {
		if err != nil {
			return err
		}
		if o.ID == acmeRenewAll {
			continue
		}
		if r, err := c.recordHex(o.ID); errors.Is(err, ErrNotFound) || (err == nil && r.StatusAt(now) != StatusValid) {
			old = append(old, o.ID)
		}
	}
	for _, id := range old {
		if err := c.db.DeleteObject(kindRenew, id); err != nil {
			return err
		}
	}
	return nil
}

// RevokedAtRoot reports whether c is an intermediate whose root's CRL (the
// one LoadRootCRL reads; an unreadable one is ignored) lists it: retired
// by a rotation (superseded) or compromised.
func (c *CA) RevokedAtRoot() bool {
	if !c.IsIntermediate() {
		return false
	}
	crl, err := c.LoadRootCRL()
	return err == nil && crl.IsRevoked(c.Cert.SerialNumber)
}

// ErrACMECARevoked is the error of CheckACMEIssuer and IssueACME for a CA
// revoked at its root.
var ErrACMECARevoked = errors.New("this CA is revoked at its root")

// CheckACMEIssuer refuses ACME issuance, with an error matching
// ErrACMECARevoked, by a CA revoked at its root (RevokedAtRoot): its
// certificates would not verify, and the renewal information it gives
// for the ones it issued asks their clients to renew elsewhere.
func (c *CA) CheckACMEIssuer() error {
	if c.RevokedAtRoot() {
		return fmt.Errorf("%w (%s, serial %s): it issues no more certificates; order from the CA that succeeds it",
			ErrACMECARevoked, c.Cert.Subject, SerialHex(c.Cert.SerialNumber))
	}
	return nil
}
