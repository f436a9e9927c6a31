package ca

import (
	"crypto"
	"crypto/x509"
	"runtime"
)

// ACMEFinalize is one finalized order of IssueACMEBatch: the order and
// the CSR of its finalize.
type ACMEFinalize struct {
	Order ACMEOrder
	CSR   *x509.CertificateRequest
}

// IssueACMEBatch issues the certificate of each finalized order as
// IssueACME does, made durable together (group commit): the serials of
// the orders that pass IssueACME's checks are reserved at once, their
// certificates signed and written without a sync, then made durable
// together (syncGroup, as IssueBatch does) before their records are
// completed at once. A crash before that leaves pending records that
// Check completes or voids, as after IssueBatch.
//
// It returns, by order, the certificate or why there is none: an order
// refused (ErrACMECSR, ErrACMEIdentifier) does not stop the others, and
// a failure of the disk or the store fails every order whose certificate
// was not yet durable, leaving their records pending for Check. No
// certificate is returned before its files are durable. Orders may name
// the same name. The caller must hold the lock.
func (c *CA) IssueACMEBatch(signer crypto.Signer, fins []ACMEFinalize) ([]*Issued, []error) {
	out := make([]*Issued, len(fins))
	errs := make([]error, len(fins))
	if err := c.CheckACMEIssuer(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return out, errs
	}
	var reqs []Request
	var idx []int // fins' index of each of reqs
	for i, f := range fins {
		req, err := c.acmeRequest(f.Order, f.CSR)
		if err != nil {
			errs[i] = err
			continue
		}
		reqs = append(reqs, req)
		idx = append(idx, i)
	}
	if len(reqs) == 0 {
		return out, errs
	}
	workers := min(runtime.GOMAXPROCS(0), 4)
	written, werrs := c.writeGroup(&serialSigner{s: signer}, reqs, workers)
	g := &batchGroup{c: c, workers: workers}
	defer g.abandon()
	for j, p := range written {
		if p == nil {
			errs[idx[j]] = werrs[j]
			continue
		}
		p.index = idx[j]
		g.pending = append(g.pending, p)
	}
	group := g.pending
	if err := c.commitACMEGroup(g); err != nil {
		for _, p := range group {
			errs[p.index] = err
		}
		return out, errs
	}
	for _, p := range group {
		out[p.index] = c.issuedOf(p.rec, p.cert, p.key)
	}
	return out, errs
}

// commitACMEGroup makes g's certificates durable and completes their
// records; ACME certificates move no current.* links (see Current). On
// failure g keeps them, for abandon.
func (c *CA) commitACMEGroup(g *batchGroup) error {
	if len(g.pending) == 0 {
		return nil
	}
	if err := c.syncGroup(g.pending); err != nil {
		return err
	}
	if err := c.completeGroup(g.pending); err != nil {
		return err
	}
	for _, p := range g.pending {
		p.release()
	}
	g.pending = nil
	return nil
}
