package ca

import (
	"errors"
	"fmt"
	"math/big"
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
	if rec.Status == StatusRevoked && !(onHold && reason != revoke.CertificateHold) {
		return &RevokeResult{Record: rec, Already: true, Unpublished: !c.onCRL(rec)}, nil
	}
	if rec.Status != StatusRevoked {
		rec.RevokedAt = c.Now().UTC().Truncate(time.Second)
	}
	rec.Status, rec.Reason = StatusRevoked, reason.String()
	if err := c.logAndPut(rec); err != nil {
		return nil, err
	}
	return &RevokeResult{Record: rec}, nil
}

// logAndPut appends the record's revocation state to the revocation log,
// then replaces the record. The log goes first: after a crash between the
// two, the CRL already lists the revocation and Check updates the record.
func (c *CA) logAndPut(rec *Record) error {
	if err := c.appendRevEvent(eventOf(rec)); err != nil {
		return err
	}
	return c.putRecord(rec)
}
