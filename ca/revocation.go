package ca

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"

	"minica/revoke"
)

// ErrNotRevocable is returned by Revoke for a serial that was reserved but
// never became a certificate (pending or void).
var ErrNotRevocable = errors.New("not an issued certificate")

// ErrNotOnHold is returned by Revoke with removeFromCRL for a certificate
// that is not on certificateHold: removeFromCRL only lifts a hold.
var ErrNotOnHold = errors.New("removeFromCRL only lifts a certificateHold")

// RevokeResult tells what Revoke did.
type RevokeResult struct {
	Record *Record
	// Already is set when the certificate was revoked before; the record,
	// with its original time and reason, is then unchanged.
	Already bool
	// Lifted is set when removeFromCRL took the certificate off hold.
	Lifted bool
	// Unpublished is set with Already when the published CRL does not list
	// the revocation (an earlier revoke was interrupted before publishing):
	// the caller should publish a CRL.
	Unpublished bool
	// Successors are the certificates renewed from Record, directly or
	// through another renewal, that this call revoked with it (see
	// RevokesLine), oldest first; each names its predecessor in RenewalOf.
	Successors []*Record
	// StillValid are the certificates renewed from Record that stay valid
	// because the reason does not revoke the line, oldest first.
	StillValid []*Record
	// Finished says what settling the interrupted issuances of the line
	// did (see FinishInterrupted), one sentence each.
	Finished []string
}

// Changed reports whether the call changed a revocation, or found one the
// published CRL lacks: the caller should then publish a CRL.
func (r *RevokeResult) Changed() bool {
	return !r.Already || r.Unpublished || len(r.Successors) > 0
}

// ChangedRecords are the records whose revocation state the published CRL
// must now show (see PublishRevocations): Record unless it was already so
// and published, and the Successors.
func (r *RevokeResult) ChangedRecords() []*Record {
	var out []*Record
	if !r.Already || r.Unpublished {
		out = append(out, r.Record)
	}
	return append(out, r.Successors...)
}

// Revoke records the revocation of the certificate with serial, at Now()
// with reason. The caller must hold the lock (see Lock).
//
// An unknown serial gives an error matching ErrNotFound and changes nothing.
// Revoking a revoked certificate again is not an error: the record keeps its
// original time and reason and Already is set (certificateHold can be
// turned into a final reason, the only change allowed); Unpublished then
// tells whether the published CRL still lacks the revocation. Expired
// certificates can be revoked. RemoveFromCRL lifts a certificateHold and
// makes the certificate valid again; on anything else it gives ErrNotOnHold.
//
// A reason that revokes the line (RevokesLine) revokes, with the
// certificate and for the same reason, every certificate renewed from it
// (Successors); so does a repeated revoke of a certificate revoked for
// such a reason, completing a line that a crash cut short. Other reasons
// leave them valid (StillValid).
func (c *CA) Revoke(serial *big.Int, reason revoke.Reason) (*RevokeResult, error) {
	if !reason.Valid() {
		return nil, fmt.Errorf("invalid revocation reason code %d", int(reason))
	}
	rec, err := c.Record(serial)
	if err != nil {
		return nil, err
	}
	return c.RevokeRecord(rec, reason)
}

// RevokeRecord is Revoke for a record the caller read under the lock it
// holds (from Record, RecordsByName or Resolve): the record is updated in
// place and returned in the result.
//
// The certificate and the successors it revokes are written together: one
// append to the revocation log (one transaction on PostgreSQL), then their
// records, so that a crash leaves either none of them revoked or a state
// that Check completes. Interrupted issuances of the name are settled
// first (FinishInterrupted), so that no successor is completed later
// outside its line.
func (c *CA) RevokeRecord(rec *Record, reason revoke.Reason) (*RevokeResult, error) {
	if !reason.Valid() {
		return nil, fmt.Errorf("invalid revocation reason code %d", int(reason))
	}
	switch rec.Status {
	case StatusPending, StatusVoid:
		return nil, fmt.Errorf("serial %s: %w (status %s)", rec.Serial, ErrNotRevocable, rec.Status)
	}
	onHold := rec.Status == StatusRevoked && rec.Reason == revoke.CertificateHold.String()
	if reason == revoke.RemoveFromCRL {
		if !onHold {
			return nil, fmt.Errorf("serial %s: %w", rec.Serial, ErrNotOnHold)
		}
		rec.Status, rec.RevokedAt, rec.Reason = StatusValid, time.Time{}, ""
		if err := c.logAndPut(rec); err != nil {
			return nil, err
		}
		return &RevokeResult{Record: rec, Lifted: true}, nil
	}
	res := &RevokeResult{Record: rec}
	line, err := c.lineRecords(rec, res)
	if err != nil {
		return nil, err
	}
	now := c.Now().UTC().Truncate(time.Second)
	var changed []*Record
	if rec.Status == StatusRevoked && !(onHold && reason != revoke.CertificateHold) {
		res.Already = true
	} else {
		if rec.Status != StatusRevoked {
			rec.RevokedAt = now
		}
		rec.Status, rec.Reason = StatusRevoked, reason.String()
		changed = append(changed, rec)
	}
	if lr, ok := lineReason(rec, reason); ok {
		for _, s := range line {
			if revokeInLine(s, lr, now) {
				changed = append(changed, s)
				res.Successors = append(res.Successors, s)
			}
		}
	} else {
		for _, s := range line {
			if s.StatusAt(now) == StatusValid {
				res.StillValid = append(res.StillValid, s)
			}
		}
	}
	if len(changed) > 0 {
		if err := c.logAndPutAll(changed); err != nil {
			return nil, err
		}
	}
	if res.Already {
		res.Unpublished = !c.onCRL(rec)
	}
	return res, nil
}

// lineRecords returns the certificates renewed from rec (see lineOf),
// read under the lock, after settling the interrupted issuances of its
// name when one of them is in the line; what that did goes to
// res.Finished.
func (c *CA) lineRecords(rec *Record, res *RevokeResult) ([]*Record, error) {
	recs, err := c.RecordsByName(rec.Name)
	if err != nil {
		return nil, err
	}
	line := lineOf(rec.Serial, recs)
	if !slices.ContainsFunc(line, func(r *Record) bool { return r.Status == StatusPending }) {
		return line, nil
	}
	if res.Finished, err = c.FinishInterrupted(rec.Name); err != nil {
		return nil, err
	}
	if recs, err = c.RecordsByName(rec.Name); err != nil {
		return nil, err
	}
	return lineOf(rec.Serial, recs), nil
}

// logAndPut appends the record's revocation state to the revocation log,
// then replaces the record. The log goes first: after a crash between the
// two, the CRL already lists the revocation and Check updates the record.
func (c *CA) logAndPut(rec *Record) error {
	return c.logAndPutAll([]*Record{rec})
}

// logAndPutAll is logAndPut for several records written together: their
// events are one append to the log (one transaction with the records on
// PostgreSQL), so that a crash keeps all of them or none (but for a power
// loss within the append, after which Check completes what a line lacks,
// see completeLines).
func (c *CA) logAndPutAll(recs []*Record) error { return c.db.RevokeRecords(recs) }
