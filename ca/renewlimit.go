package ca

import (
	"errors"
	"fmt"
	"time"
)

// ErrRenewedRecently is matched by *RenewedRecentlyError.
var ErrRenewedRecently = errors.New("certificate renewed too recently")

// RenewedRecentlyError is returned by Renew for a certificate that has a
// successor issued less than RenewOptions.MinInterval ago. It matches
// ErrRenewedRecently.
type RenewedRecentlyError struct {
	Record    *Record       // the certificate asked to renew
	Successor *Record       // its newest successor
	Wait      time.Duration // until it may be renewed again
}

func (e *RenewedRecentlyError) Error() string {
	return fmt.Sprintf("certificate %q (serial %s) was renewed by serial %s at %s: it may be renewed again in %s",
		e.Record.Name, e.Record.Serial, e.Successor.Serial, e.Successor.IssuedAt.UTC().Format(time.RFC3339), e.Wait.Round(time.Second))
}

// Unwrap makes errors.Is(err, ErrRenewedRecently) true.
func (e *RenewedRecentlyError) Unwrap() error { return ErrRenewedRecently }

// checkRenewInterval refuses rec when one of its successors (a record of
// its name that renews it, not void) was issued less than within before
// now. It reads the store, not a process's memory: under the lock the
// caller holds, no other process of the CA (a serve replica on the same
// database) can renew rec between this check and the renewal.
func (c *CA) checkRenewInterval(rec *Record, now time.Time, within time.Duration) error {
	if within <= 0 {
		return nil
	}
	recs, err := c.RecordsByName(rec.Name)
	if err != nil {
		return fmt.Errorf("looking up the renewals of serial %s: %w", rec.Serial, err)
	}
	var newest *Record
	for _, r := range recs {
		if r.RenewalOf == rec.Serial && (newest == nil || r.IssuedAt.After(newest.IssuedAt)) {
			newest = r
		}
	}
	if newest == nil {
		return nil
	}
	if age := now.Sub(newest.IssuedAt); age < within {
		return &RenewedRecentlyError{Record: rec, Successor: newest, Wait: within - age}
	}
	return nil
}
