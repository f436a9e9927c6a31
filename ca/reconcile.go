package ca

import (
	"encoding/pem"
	"fmt"
	"math/big"
	"time"

	"minica/revoke"
)

// A database restored from a backup has forgotten what happened after the
// backup was taken, revocations included. A revocation is a promise that
// the certificate is never trusted again: a restored database must not
// un-revoke. The CRLs this CA published after the backup are still around
// (the published copy in the CA directory, the CRL every proxy and replica
// holds), and each lists every revocation up to its own moment. Check
// reads them and re-applies what the store lacks; see reconcile.

// ReconcileSource is a CRL of this CA known outside the store, and where
// it came from (a file name, for messages).
type ReconcileSource struct {
	Name string
	CRL  *revoke.CRL
}

// ParseReconcileSource reads a CRL of the CA (DER or PEM) given to check
// (`minica check --crl FILE`): a copy a proxy, a replica or a web server
// holds. It must verify against the CA certificate.
func (c *CA) ParseReconcileSource(name string, data []byte) (ReconcileSource, error) {
	if block, _ := pem.Decode(data); block != nil && block.Type == "X509 CRL" {
		data = block.Bytes
	}
	crl, err := revoke.ParseCRL(data, c.Cert)
	if err != nil {
		return ReconcileSource{}, fmt.Errorf("reading CRL %q: %w", name, err)
	}
	return ReconcileSource{Name: name, CRL: crl}, nil
}

// reconcile re-applies the revocations that the sources list and the
// store's revocation log does not: a serial the log never saw revoked, or
// one it saw lifted when the source is newer than the store's own CRL (a
// hold lifted and placed again after the backup). Each keeps the time and
// reason of the CRL entry. A serial without a record (its certificate was
// issued after the backup, and its file is not in this directory) gets its
// revocation back in the log, so that every CRL lists it again, and is
// reported. The store's next CRL number is raised above every source's, so
// that no number is signed twice. The published copy in the CA directory
// (crl.der, crl.pem) is a source of itself where the engine keeps its CRL
// apart from it (PublishedCopies); it is read here, before CheckCRL makes
// it the store's CRL again. The caller holds the
// lock.
func (c *CA) reconcile(rep *CheckReport, sources []ReconcileSource) error {
	for _, cp := range c.db.PublishedCopies() {
		if src, err := c.ParseReconcileSource(cp.Name, cp.Data); err == nil {
			sources = append(sources, src)
		}
	}
	if len(sources) == 0 {
		return nil
	}
	events, err := c.latestLogEvents()
	if err != nil {
		return nil // reported by checkRecords
	}
	latest := make(map[[16]byte]logEvent, len(events))
	for _, ev := range events {
		latest[ev.Serial] = ev
	}
	storeNumber := big.NewInt(0)
	if crl, err := c.LoadCRL(); err == nil {
		storeNumber = crl.Number()
	}
	highest := new(big.Int)
	done := map[[16]byte]bool{}
	for _, src := range sources {
		newer := src.CRL.Number().Cmp(storeNumber) > 0
		if src.CRL.Number().Cmp(highest) > 0 {
			highest = src.CRL.Number()
		}
		for e := range src.CRL.Entries() {
			var key [16]byte
			if e.Serial.Sign() <= 0 || e.Serial.BitLen() > 128 {
				continue // not a serial minica signs
			}
			e.Serial.FillBytes(key[:])
			ev, known := latest[key]
			if done[key] || (known && !ev.Lifted) || (known && ev.Lifted && !newer) {
				continue
			}
			done[key] = true
			if err := c.reapply(rep, src, e); err != nil {
				return err
			}
		}
	}
	if highest.Sign() > 0 {
		raised, err := c.db.RaiseCRLNumber(highest)
		if err != nil {
			return err
		}
		if raised {
			rep.Repaired = append(rep.Repaired, fmt.Sprintf("raised the store's CRL number to %s, the highest published (%s is older: a restored backup?)", highest, storeNumber))
		}
	}
	return nil
}

// reapply restores the revocation of entry e, listed by src.
func (c *CA) reapply(rep *CheckReport, src ReconcileSource, e revoke.Entry) error {
	serial := SerialHex(e.Serial)
	at := e.RevokedAt.UTC().Truncate(time.Second)
	rec, err := c.Record(e.Serial)
	if err != nil {
		// No record: the revocation alone, valid as long as the CA.
		ev := revEvent{Serial: serial, RevokedAt: at, Reason: e.Reason.String(), NotAfter: c.Cert.NotAfter.UTC()}
		if err := c.appendRevEvent(ev); err != nil {
			return err
		}
		rep.Repaired = append(rep.Repaired, fmt.Sprintf("restored the revocation of serial %s (%s, %s) from %s", serial, e.Reason, at.Format(time.RFC3339), src.Name))
		rep.Problems = append(rep.Problems, fmt.Sprintf("serial %s is revoked on CRL %s of %s but has no record (issued after the backup was taken?): its revocation is kept; copy its certificate into certs/ and run check again to recreate the record", serial, src.CRL.Number(), src.Name))
		return nil
	}
	switch rec.Status {
	case StatusPending, StatusVoid:
		// A serial this CA never issued as far as the store knows:
		// keep the revocation in the log all the same.
		return c.appendRevEvent(revEvent{Serial: serial, RevokedAt: at, Reason: e.Reason.String(), NotAfter: c.Cert.NotAfter.UTC()})
	case StatusRevoked:
		// The record says so, the log lost it: log it again.
	default:
		rec.Status, rec.RevokedAt, rec.Reason = StatusRevoked, at, e.Reason.String()
	}
	if err := c.logAndPut(rec); err != nil {
		return err
	}
	rep.Repaired = append(rep.Repaired, fmt.Sprintf("restored the revocation of %s (serial %s, %s, %s) from %s: the store had lost it", rec.Name, serial, e.Reason, at.Format(time.RFC3339), src.Name))
	return nil
}

// Reconcile re-applies the revocations that sources list and the store
// lost, as Check does (see reconcile), and says what it did: for `minica
// serve`, whose served CRL is newer than a store restored from a backup.
// The caller holds the lock.
func (c *CA) Reconcile(sources []ReconcileSource) (repaired, problems []string, err error) {
	rep := &CheckReport{}
	err = c.reconcile(rep, sources)
	return rep.Repaired, rep.Problems, err
}
