package ca

import (
	"errors"
	"fmt"
	"time"
)

// renewalLinks collects, while Check reads every record, the successor
// each renewed certificate should name, so that a renewed_by a power loss
// undid (LinkRenewal does not sync) is restored from the successor's
// renewal_of, which was written with its reservation.
type renewalLinks map[string]successorRef

type successorRef struct {
	serial   string
	issuedAt time.Time
}

// add notes rec when it is an issued successor.
func (l renewalLinks) add(rec *Record) {
	if rec.RenewalOf == "" || !rec.Issued() {
		return
	}
	if s, ok := l[rec.RenewalOf]; ok && s.issuedAt.After(rec.IssuedAt) {
		return // the newest successor is the one named
	}
	l[rec.RenewalOf] = successorRef{rec.Serial, rec.IssuedAt}
}

// repair gives every predecessor without a renewed_by its newest successor.
func (c *CA) repairRenewalLinks(rep *CheckReport, l renewalLinks) error {
	for pred, succ := range l {
		rec, err := c.recordHex(pred)
		if errors.Is(err, ErrNotFound) {
			rep.Problems = append(rep.Problems, fmt.Sprintf("serial %s renews serial %s, which has no record", succ.serial, pred))
			continue
		}
		if err != nil || rec.RenewedBy != "" {
			continue // an unreadable record is reported by the record pass
		}
		rec.RenewedBy = succ.serial
		if err := c.appendRecord(rec); err != nil {
			return err
		}
		rep.Repaired = append(rep.Repaired, fmt.Sprintf("linked %s (serial %s) to its successor %s", rec.Name, rec.Serial, succ.serial))
	}
	return nil
}
