package serve

import (
	"strconv"
	"time"

	"minica/ca"
)

// realTimer is the default Config.NewTimer.
func realTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

// revWatch is what Watch knows of the revocation log (db/revoked.log). Used
// by the Watch goroutine only.
type revWatch struct {
	stamp   ca.FileStamp // the version last looked at
	seen    bool         // stamp was read once
	pending bool         // the log changed and was not compared with the CRL yet
	retryAt time.Time    // no new attempt before, after a failure
	warned  ca.FileStamp // the version whose unpublished revocations were logged (--no-sign)
	lastErr string       // the last stat error logged, not repeated
}

// noticeRevocations is the part of a Watch round that looks at the
// revocation log: when it changed (one lstat a round), the OCSP responder
// is told (Config.OnCRLChange), since its answers come from the database,
// and revocations the served CRL lacks ("unpublished": `minica revoke
// --no-crl`, or a revoke whose publishing failed) are published at once
// rather than at the next half-life re-sign. Without the Signer they are
// logged. The caller holds caMu.
func (s *Server) noticeRevocations() {
	stamp, err := s.cfg.CA.RevocationLogStamp()
	if err != nil {
		if msg := err.Error(); msg != s.rev.lastErr {
			s.rev.lastErr = msg
			s.log.event("revocation-log-unreadable", "error", msg)
		}
		return
	}
	now := s.cfg.Now()
	if !s.rev.seen || stamp != s.rev.stamp {
		if s.rev.seen {
			if s.cfg.OnCRLChange != nil {
				s.cfg.OnCRLChange()
			}
			// The revoking process publishes its own CRL in the
			// meantime, as a rule: it is compared a round later.
			s.rev.retryAt = now.Add(s.cfg.PollInterval)
		}
		s.rev.seen, s.rev.stamp, s.rev.pending = true, stamp, true
	}
	if !s.rev.pending || now.Before(s.rev.retryAt) {
		return
	}
	cur := s.cur.Load()
	missing, err := s.cfg.CA.Unpublished(cur.crl)
	if err == nil && len(missing) > 0 && s.cfg.Signer != nil {
		s.log.event("crl-unpublished", "revocations", strconv.Itoa(len(missing)), "first", missing[0], "action", "publishing")
		err = s.publishUnpublished(cur)
	} else if err == nil && len(missing) > 0 && s.rev.warned != stamp {
		s.rev.warned = stamp
		s.log.event("crl-unpublished", "revocations", strconv.Itoa(len(missing)), "first", missing[0],
			"reason", "serve runs with --no-sign and cannot publish them; publish with 'minica crl'")
	}
	if err != nil {
		s.rev.retryAt = now.Add(retryMin)
		s.m.resignFailures.Add(1)
		s.log.event("crl-publish-failed", "error", err.Error(), "retry_in", retryMin.String())
		return
	}
	s.rev.pending = false
}

// publishUnpublished publishes a CRL under the CA lock, as `minica crl`
// does, unless the process that revoked published one meanwhile (`minica
// revoke` holds the lock until its CRL is written): then that one is
// served. The caller holds caMu.
func (s *Server) publishUnpublished(cur *published) error {
	unlock, err := s.cfg.CA.Lock(s.cfg.LockTimeout)
	if err != nil {
		return err
	}
	pub, err := s.cfg.CA.ReadPublishedCRL()
	if err == nil && pub.Stamp != cur.stamp && pub.CRL.CheckNewer(cur.crl) == nil {
		if missing, err := s.cfg.CA.Unpublished(pub.CRL); err == nil && len(missing) == 0 {
			unlock()
			s.install(pub)
			return nil
		}
	}
	pub, err = s.publishLocked()
	unlock()
	if err != nil {
		return err
	}
	s.m.resigns.Add(1)
	s.install(pub)
	return nil
}
