package serve

import (
	"errors"
	"strconv"
	"time"

	"minica/ca"
	"minica/internal/osmem"
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
// logged. Only the signer (see holdsLease) publishes. The caller holds
// caMu.
func (s *Server) noticeRevocations(signer bool) {
	stamp, err := s.cfg.CA.RevocationLogStamp()
	if err != nil {
		if msg := err.Error(); msg != s.rev.lastErr {
			s.rev.lastErr = msg
			s.log.Event("revocation-log-unreadable", "error", msg)
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
	// A CRL or delta CRL written after the log last changed was built
	// from all of it (both are written under the CA lock): nothing to
	// compare, and the log (tens of MB with 10^6 revocations) is not read.
	if ds := cur.delta.Load(); cur.stamp.MTime > stamp.MTime || (ds.body != nil && ds.stamp.MTime > stamp.MTime) {
		s.rev.pending = false
		return
	}
	if s.cfg.Signer != nil && !signer {
		return // the signing replica publishes them
	}
	// Held by another process (a revoke publishing its own CRL, as a
	// rule): look again next round.
	unlock, err := s.cfg.CA.Lock(0)
	var busy *ca.LockError
	if errors.As(err, &busy) {
		return
	}
	if err == nil {
		err = s.publishUnpublishedLocked(cur, stamp)
		unlock()
	}
	if err != nil {
		s.rev.retryAt = now.Add(retryMin)
		s.m.resignFailures.Add(1)
		s.log.Event("crl-publish-failed", "error", err.Error(), "retry_in", retryMin.String())
		return
	}
}

// publishUnpublishedLocked publishes a CRL, as `minica crl` does, when the
// revocation log holds revocations that cur lacks, with the delta CRL
// served beside it, unless a newer CRL or delta CRL is on disk (the next
// round loads it, and compares again). Without the Signer it logs them,
// once for each version of the log. The caller holds caMu and the CA
// lock.
func (s *Server) publishUnpublishedLocked(cur *published, logStamp ca.FileStamp) error {
	if onDisk, err := s.cfg.CA.CRLStamp(); err == nil && onDisk != cur.stamp {
		return nil
	}
	if onDisk, err := s.cfg.CA.DeltaCRLStamp(); err == nil && !s.deltaJudged(cur, onDisk) {
		return nil
	}
	missing, err := s.cfg.CA.Unpublished(cur.withDelta())
	// Reading the log took memory of the order of the CRL's size (40
	// bytes an event): give it back, as after loading a large CRL.
	osmem.Release(len(cur.der))
	if err != nil {
		return err
	}
	s.rev.pending = false
	switch {
	case len(missing) == 0:
		return nil
	case s.cfg.Signer == nil:
		if s.rev.warned != logStamp {
			s.rev.warned = logStamp
			s.log.Event("crl-unpublished", "revocations", strconv.Itoa(len(missing)), "first", missing[0],
				"reason", "serve runs with --no-sign and cannot publish them; publish with 'minica crl'")
		}
		return nil
	}
	s.log.Event("crl-unpublished", "revocations", strconv.Itoa(len(missing)), "first", missing[0], "action", "publishing")
	pub, err := s.publishLocked()
	if err != nil {
		s.rev.pending = true
		return err
	}
	s.m.resigns.Add(1)
	s.install(pub)
	return nil
}
