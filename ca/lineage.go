package ca

import (
	"fmt"
	"slices"
	"time"

	"minica/revoke"
)

// Whoever holds a certificate and its key can renew it (serve's /renew
// takes the certificate as the proof of identity, and so does the agent),
// so a stolen certificate is renewed by the thief. Revoking it alone then
// leaves every successor valid. A revocation whose reason says the holder
// must lose access therefore revokes the line: every certificate renewed
// from it, directly or through another renewal (see RevokesLine).

// RevokesLine reports whether revoking a certificate for reason also
// revokes every certificate renewed from it: the reasons that say its
// holder must lose access, whichever certificate of the line they hold.
//
//   - keyCompromise: the key is someone else's, who may have renewed it;
//   - cACompromise, aACompromise: the authority that vouched for the
//     holder is not to be trusted, nor what it signed since;
//   - affiliationChanged: the holder is no longer who the certificate says;
//   - cessationOfOperation: the holder, a service or a person, is gone;
//   - privilegeWithdrawn: the holder lost the right it proved.
//
// superseded says the certificate was replaced, by the successor itself
// (renew --revoke-old revokes the predecessor with it), so the successor
// stays valid; unspecified says nothing of the holder, and
// certificateHold is a pause of one certificate that may be lifted: for
// these the caller is told which successors stay valid (see
// RevokeResult.StillValid). removeFromCRL revokes nothing.
func RevokesLine(r revoke.Reason) bool {
	switch r {
	case revoke.KeyCompromise, revoke.CACompromise, revoke.AACompromise,
		revoke.AffiliationChanged, revoke.CessationOfOperation, revoke.PrivilegeWithdrawn:
		return true
	}
	return false
}

// lineOf returns the certificates renewed from root, directly or through
// another renewal, found among recs (the records of root's name: a
// renewal keeps the name), in the order of recs (oldest first).
func lineOf(root string, recs []*Record) []*Record {
	in := map[string]bool{root: true}
	// A successor can sort before its predecessor (the same second):
	// repeat until nothing joins, at most once per record.
	for range recs {
		grew := false
		for _, r := range recs {
			if !in[r.Serial] && r.RenewalOf != "" && in[r.RenewalOf] {
				in[r.Serial], grew = true, true
			}
		}
		if !grew {
			break
		}
	}
	delete(in, root)
	return slices.DeleteFunc(slices.Clone(recs), func(r *Record) bool { return !in[r.Serial] })
}

// lineReason returns the reason for which the line of rec (revoked, or
// about to be revoked for asked) is revoked, and whether it is: asked
// when it revokes lines, else the reason rec holds when that does (a
// repeated revoke, or the completion of one a crash cut short).
func lineReason(rec *Record, asked revoke.Reason) (revoke.Reason, bool) {
	if RevokesLine(asked) {
		return asked, true
	}
	return heldLineReason(rec)
}

// heldLineReason returns the reason rec is revoked for, and whether it
// revokes the line.
func heldLineReason(rec *Record) (revoke.Reason, bool) {
	if rec.Status != StatusRevoked {
		return 0, false
	}
	held, err := revoke.ParseReason(rec.Reason)
	return held, err == nil && RevokesLine(held)
}

// revokeInLine marks succ, a successor of a certificate whose line is
// revoked for reason, revoked at at, and reports whether it changed: a
// valid (or expired) certificate is revoked, a hold becomes final keeping
// its time, and one revoked already, or never issued, stays as it is.
func revokeInLine(succ *Record, reason revoke.Reason, at time.Time) bool {
	onHold := succ.Status == StatusRevoked && succ.Reason == revoke.CertificateHold.String()
	if succ.Status != StatusValid && !onHold {
		return false
	}
	if !onHold {
		succ.RevokedAt = at
	}
	succ.Status, succ.Reason = StatusRevoked, reason.String()
	return true
}

// completeLines revokes, in each of names, the certificates that must be
// revoked because a certificate they were renewed from is revoked for a
// reason that revokes the line, and a crash (or a version of minica from
// before lines were revoked) left valid; each is reported in rep. Check
// calls it after it has settled pending records. The caller holds the
// lock.
func (c *CA) completeLines(rep *CheckReport, names []string) error {
	for _, name := range names {
		recs, err := c.RecordsByName(name)
		if err != nil {
			return err
		}
		var changed []*Record
		var why []string
		for _, root := range recs {
			reason, ok := heldLineReason(root)
			if !ok {
				continue
			}
			for _, s := range lineOf(root.Serial, recs) {
				if revokeInLine(s, reason, c.Now().UTC().Truncate(time.Second)) {
					changed = append(changed, s)
					why = append(why, fmt.Sprintf("revoked %s (serial %s), renewed from serial %s, which is revoked (%s): that reason revokes the certificates renewed from it",
						s.Name, s.Serial, s.RenewalOf, reason))
				}
			}
		}
		if len(changed) == 0 {
			continue
		}
		if err := c.logAndPutAll(changed); err != nil {
			return err
		}
		rep.Repaired = append(rep.Repaired, why...)
	}
	return nil
}
