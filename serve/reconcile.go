package serve

import (
	"fmt"
	"strconv"

	"minica/ca"
)

// reconcileLocked, when the store's CRL is older than the one served (a
// database restored from a backup), re-applies the revocations of the
// served CRL that the store lost before anything is published from it: a
// restored backup never un-revokes what a replica has already served. The
// caller holds caMu and the CA lock.
func (s *Server) reconcileLocked() error {
	cur := s.cur.Load()
	if !s.storeBehind || cur == nil {
		return nil
	}
	repaired, problems, err := s.cfg.CA.Reconcile([]ca.ReconcileSource{{Name: "the CRL served (number " + cur.crl.Number().String() + ")", CRL: cur.crl}})
	if err != nil {
		return fmt.Errorf("reconciling the store with the CRL served: %w", err)
	}
	s.storeBehind = false
	if len(repaired)+len(problems) > 0 {
		s.log.Event("store-reconciled", "repaired", strconv.Itoa(len(repaired)), "problems", strconv.Itoa(len(problems)),
			"reason", "the store's CRL is older than the one served (restored from a backup?)")
		for _, p := range problems {
			s.log.Event("store-reconcile-problem", "problem", p)
		}
	}
	return nil
}
