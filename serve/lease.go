package serve

// holdsLease reports whether this replica is the one that signs CRLs
// (ca.CA.HoldCRLSigner: always on the file store; on PostgreSQL, the
// replica whose session holds the signer's advisory lock), logging each
// change of role once. A replica that is not the signer serves the newest
// CRL in the store and publishes nothing; it takes over at the first round
// after the signer's session ends. The caller holds caMu.
func (s *Server) holdsLease() bool {
	held, err := s.cfg.CA.HoldCRLSigner()
	if err != nil {
		if msg := err.Error(); msg != s.leaseErr {
			s.leaseErr = msg
			s.log.Event("crl-signer-lease-failed", "error", msg)
		}
	} else {
		s.leaseErr = ""
	}
	if held != s.m.signer.Load() || !s.leaseSeen {
		s.leaseSeen = true
		s.m.signer.Store(held)
		role := "signer"
		if !held {
			role = "follower"
		}
		s.log.Event("crl-signer", "role", role, "store", s.cfg.CA.Store())
	}
	return held
}
