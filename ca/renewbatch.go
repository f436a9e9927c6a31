package ca

import (
	"context"
	"crypto"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"sync"
	"time"
)

// RenewalPlan is what PlanRenewals found: the certificates to renew and the
// ones that cannot be.
type RenewalPlan struct {
	// Due lists the serials to renew, in serial order.
	Due []string
	// Refused holds a *RenewalRefusal for every due certificate that
	// cannot be renewed (its successor would outlive the CA).
	Refused []error
	// Resumed lists the successors an interrupted earlier run issued for
	// due certificates, now linked to them (LinkRenewal): they are not
	// renewed twice.
	Resumed []*Record
	// NoKey lists the due certificates from sign, whose key minica does
	// not hold: only their holder's CSR renews them (see Renew), unless
	// ReuseKey. They are left out of Due.
	NoKey []*Record
	// Records is how many records were read.
	Records int
}

// RenewalRefusal is a due certificate that cannot be renewed, and why.
type RenewalRefusal struct {
	Record *Record
	Err    error
}

func (e *RenewalRefusal) Error() string { return e.Err.Error() }

// Unwrap returns the reason.
func (e *RenewalRefusal) Unwrap() error { return e.Err }

// PlanRenewals reads every record once and returns the certificates due for
// renewal within the window at Now (see DueForRenewal), each checked from
// its record as RenewalRequest will check it, so that a caller can refuse
// the whole batch before the first key is made. The caller must hold the
// lock. A due certificate whose successor an interrupted earlier run
// issued (the successor names it, it does not name the successor yet) is
// not due: its interrupted issuance is finished (FinishInterrupted) and, if
// the successor survived, the two are linked. Memory grows with the
// number of due certificates and of renewals, not with the database.
func (c *CA) PlanRenewals(within time.Duration, opts RenewOptions) (*RenewalPlan, error) {
	now := c.Now().UTC()
	parts, err := c.scanShards(func(p *planPart, rec *Record) {
		if rec.RenewalOf != "" && (rec.Status == StatusPending || rec.Issued()) {
			if pred, ok := serialKey(rec.RenewalOf); ok {
				succ, _ := serialKey(rec.Serial)
				p.successors = append(p.successors, [2][16]byte{pred, succ})
			}
		}
		if !DueForRenewal(rec, now, within) {
			return
		}
		if !rec.HasKey && !opts.ReuseKey && opts.CSR == nil {
			p.noKey = append(p.noKey, rec)
			return
		}
		if err := c.checkRenewalRecord(rec, now, opts); err != nil {
			p.refused = append(p.refused, &RenewalRefusal{Record: rec, Err: err})
			return
		}
		p.due = append(p.due, rec.Serial)
	})
	if err != nil {
		return nil, err
	}
	plan := &RenewalPlan{}
	successors := map[[16]byte][16]byte{} // predecessor -> successor
	for _, p := range parts {
		plan.Records += p.records
		plan.Due = append(plan.Due, p.due...)
		plan.Refused = append(plan.Refused, p.refused...)
		plan.NoKey = append(plan.NoKey, p.noKey...)
		for _, s := range p.successors {
			successors[s[0]] = s[1]
		}
	}
	due := plan.Due[:0]
	for _, serial := range plan.Due {
		key, _ := serialKey(serial)
		succ, ok := successors[key]
		if !ok {
			due = append(due, serial)
			continue
		}
		rec, err := c.resumeRenewal(hex.EncodeToString(succ[:]))
		if err != nil {
			return nil, err
		}
		if rec == nil {
			due = append(due, serial) // the interrupted successor was voided
			continue
		}
		plan.Resumed = append(plan.Resumed, rec)
	}
	plan.Due = due
	return plan, nil
}

// planPart is what scanning one shard of the database found.
type planPart struct {
	records    int
	due        []string
	refused    []error
	noKey      []*Record
	successors [][2][16]byte
	err        error
}

// scanShards reads every record as Records does, one part of the
// database (a shard directory of the file store) per goroutine on up to
// four CPUs, so that planning a large batch takes a fraction of a second
// per 10^5 records; each record goes to add with its part's planPart.
// Parts come back in order, each in serial order. A record that does not
// decode fails the scan (run minica check).
func (c *CA) scanShards(add func(*planPart, *Record)) ([]*planPart, error) {
	seqs, err := c.db.RecordParts()
	if err != nil {
		return nil, err
	}
	parts := make([]*planPart, len(seqs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), 4) {
		wg.Go(func() {
			for i := range next {
				p := &planPart{}
				parts[i] = p
				for rec, err := range seqs[i] {
					if err != nil {
						p.err = err
						break
					}
					p.records++
					add(p, rec)
				}
			}
		})
	}
	for i := range seqs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, p := range parts {
		if p.err != nil {
			return nil, p.err
		}
	}
	return parts, nil
}

// checkRenewalRecord is RenewalRequest's check of rec without reading its
// certificate: the successor's lifetime is the record's unless opts says.
func (c *CA) checkRenewalRecord(rec *Record, now time.Time, opts RenewOptions) error {
	if err := CheckRenewable(rec, now, opts); err != nil {
		return err
	}
	lifetime := opts.Validity
	if lifetime == 0 {
		lifetime = rec.NotAfter.Sub(rec.NotBefore)
	}
	if _, _, err := c.validity(now.Truncate(time.Second), lifetime); err != nil {
		return fmt.Errorf("renewing %q (serial %s): %w", rec.Name, rec.Serial, err)
	}
	return nil
}

// resumeRenewal finishes the interrupted issuance of successor serial,
// points its name's current.* links at it (the run may have been stopped
// after completing its record and before moving them) and links it to its
// predecessor; it returns nil when the issuance was voided.
func (c *CA) resumeRenewal(serial string) (*Record, error) {
	rec, err := c.recordHex(serial)
	if err != nil {
		return nil, err
	}
	if rec.Status == StatusPending {
		// This points the links too.
		if _, err := c.FinishInterrupted(rec.Name); err != nil {
			return nil, err
		}
		if rec, err = c.recordHex(serial); err != nil {
			return nil, err
		}
	} else if err := c.checkCurrentOf(&CheckReport{}, rec.Name); err != nil {
		return nil, err
	}
	if !rec.Issued() {
		return nil, nil
	}
	if _, err := c.LinkRenewal(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

func serialKey(s string) ([16]byte, bool) {
	var k [16]byte
	n, err := hex.Decode(k[:], []byte(s))
	return k, err == nil && n == 16
}

// RenewBatch renews the certificates of serials (from PlanRenewals) as one
// batch (see IssueBatch): their successors are made durable in groups, and
// report is called, in order, for each once it is durable and linked to its
// predecessor. The caller must hold the lock. It stops at the first error,
// returning how many were renewed; a certificate that can no longer be
// renewed (RenewalRequest) stops it too, and so does ctx: the successors
// issued until then are reported first.
//
// The predecessors are read and checked (RenewalRequest) by a goroutine
// up to a group ahead of the one being issued, so that reading them
// overlaps with making and syncing the successors; each is linked to its
// successor (linkTo) by the workers that complete the group.
func (c *CA) RenewBatch(ctx context.Context, signer crypto.Signer, serials []string, opts RenewOptions, o BatchOptions, report func(*Renewed) error) (int, error) {
	ahead := o.GroupSize
	if ahead <= 0 {
		ahead = BatchGroupSize
	}
	type renewal struct {
		req  Request
		pred *Record
		err  error
	}
	next := make(chan renewal, ahead)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(next)
		for _, serial := range serials {
			if ctx.Err() != nil {
				return
			}
			rec, err := c.recordHex(serial)
			var req Request
			if err == nil {
				req, err = c.RenewalRequest(rec, opts)
			}
			select {
			case next <- renewal{req, rec, err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	})
	defer func() {
		close(stop)
		wg.Wait()
	}()
	var reqErr error
	reqs := func(yield func(Request) bool) {
		for rn := range next {
			if ctx.Err() != nil {
				return
			}
			if rn.err != nil {
				reqErr = rn.err
				return
			}
			rn.req.renews = rn.pred
			if !yield(rn.req) {
				return
			}
		}
	}
	n, err := c.IssueBatch(signer, iter.Seq[Request](reqs), o, func(r BatchResult) error {
		return report(&Renewed{Issued: r.Issued, Predecessor: r.Request.renews})
	})
	return n, errors.Join(err, reqErr)
}
