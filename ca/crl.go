package ca

import (
	"crypto"
	"crypto/x509"
	"fmt"
	"iter"
	"math/big"
	"time"

	"minica/ca/store"
	"minica/revoke"
)

// Files of the published CRL, relative to the CA directory.
const (
	CRLPEMFile    = store.CRLPEMFile    // the current CRL, PEM ("X509 CRL")
	CRLDERFile    = store.CRLDERFile    // the same CRL, DER
	crlNumberFile = store.CRLNumberFile // the last CRL number used, decimal
)

// ExpiredGrace is how long a revoked certificate stays on the CRL after it
// expires. RFC 5280 section 3.3 lets a CA drop expired certificates; keeping
// them a while longer lets clocks that lag, and checks of past signatures,
// still see the revocation.
const ExpiredGrace = 90 * 24 * time.Hour

// ErrNoCRL is returned by LoadCRL when the CA has no published CRL.
var ErrNoCRL = store.ErrNoCRL

// CRLInfo describes a published CRL.
type CRLInfo struct {
	Number                 *big.Int
	ThisUpdate, NextUpdate time.Time
	Entries                int
	DER                    []byte
	// Delta is set for a delta CRL, whose base CRL number is Base.
	Delta            bool
	Base             *big.Int
	PEMFile, DERFile string // paths, for messages
}

// PublishCRL signs a new CRL with signer and writes it as crl.pem and
// crl.der, atomically. The caller must hold the lock (see Lock).
//
// thisUpdate is Now(); nextUpdate is thisUpdate plus lifetime, or plus the
// CA's CRL lifetime setting when lifetime is 0. The CRL number is the
// signing time in milliseconds since 1970, raised if need be to one more than
// both the number file and the published CRL (see nextCRLNumber). The number
// file is written first, then crl.pem (what web servers read), then crl.der
// (what minica reads): after a crash between the two, minica sees the older
// CRL, reports its revocations as unpublished, and Check makes the pair agree.
// It lists every revoked certificate except those expired for longer than
// ExpiredGrace; a revocation recorded after thisUpdate (the clock went back)
// is listed at thisUpdate. When the CA signs delta CRLs (DeltaSettings) and
// this CRL is large enough, an empty delta CRL against it follows, so that
// the next revocation (PublishRevocations) signs a delta, not the whole list;
// complete CRLs then name the delta's URL, if set, as their freshest CRL.
func (c *CA) PublishCRL(signer crypto.Signer, lifetime time.Duration) (*CRLInfo, error) {
	if lifetime == 0 {
		lifetime = time.Duration(c.Settings.CRLLifetime)
	}
	clock := c.Now()
	now := clock.UTC().Truncate(time.Second)
	number, err := c.db.NextCRLNumber(clock)
	if err != nil {
		return nil, err
	}
	if err := c.crashed(crlNumberFile); err != nil {
		return nil, err
	}
	events, err := c.revokedState()
	if err != nil {
		return nil, err
	}
	count := 0
	var freshest []string
	if d := c.Settings.DeltaCRL; !d.Off && d.URL != "" {
		freshest = []string{d.URL}
	}
	der, err := revoke.Build(revoke.Params{
		Issuer: c.Cert, Signer: signer, Number: number, FreshestCRL: freshest,
		ThisUpdate: now, NextUpdate: now.Add(lifetime), ExpectedEntries: len(events),
	}, crlEntries(events, now, &count))
	if err != nil {
		return nil, err
	}
	// One that lost the race to a higher number (another replica of the
	// store) leaves the published copy to its winner.
	saved, err := c.db.SaveCRL(number, der)
	if err != nil {
		return nil, err
	}
	if saved {
		if err := c.writeCRLChain(); err != nil {
			return nil, err
		}
	}
	if saved && c.deltaDue(count) {
		if _, err := c.signDelta(signer, number, nil); err != nil {
			return nil, fmt.Errorf("CRL %s is published, but its delta CRL is not: %w", number, err)
		}
	}
	return &CRLInfo{Number: number, ThisUpdate: now, NextUpdate: now.Add(lifetime), Entries: count, DER: der,
		PEMFile: c.dir.Join(CRLPEMFile), DERFile: c.dir.Join(CRLDERFile)}, nil
}

// crlEntries yields the entries of the next CRL from the revoked events of
// the log, counting them in *count. One big.Int holds every serial in turn:
// Build copies it before asking for the next entry, and a million small
// allocations would double the garbage of a large CRL.
func crlEntries(events []logEvent, thisUpdate time.Time, count *int) iter.Seq[revoke.Entry] {
	return func(yield func(revoke.Entry) bool) {
		serial := new(big.Int)
		for i := range events {
			ev := &events[i]
			notAfter, at := unixTime(ev.NotAfter), unixTime(ev.RevokedAt)
			if thisUpdate.Sub(notAfter) > ExpiredGrace {
				continue
			}
			if at.After(thisUpdate) {
				at = thisUpdate
			}
			*count++
			if !yield(revoke.Entry{Serial: serial.SetBytes(ev.Serial[:]), RevokedAt: at, Reason: revoke.Reason(ev.Reason)}) {
				return
			}
		}
	}
}

// crashed calls the test hook crashAfter, if set, after file was written.
func (c *CA) crashed(file string) error {
	if c.crashAfter == nil {
		return nil
	}
	return c.crashAfter(file)
}

// LoadCRL reads and verifies the published CRL (crl.der) against the CA
// certificate, with the current delta CRL applied when there is one (see
// DeltaCRL): what the CA has published as revoked. It gives an error
// matching ErrNoCRL when none exists, and the revoke package's sentinels
// for a corrupt or foreign one. Its dates are not checked; see
// revoke.Freshness.
func (c *CA) LoadCRL() (*revoke.CRL, error) {
	crl, _, err := store.LoadCRL(c.db, c.Cert)
	if err != nil {
		return nil, err
	}
	return c.WithCurrentDelta(crl), nil
}

// WithCurrentDelta returns crl, a complete CRL of the CA, with the current
// delta CRL (DeltaCRL) applied when there is one that applies to it, else
// crl itself: a missing, stale or unreadable delta leaves its revocations
// unpublished (Unpublished), for serve and Check to publish them in a
// complete CRL.
func (c *CA) WithCurrentDelta(crl *revoke.CRL) *revoke.CRL {
	if delta, err := c.DeltaCRL(); err == nil {
		if combined, err := crl.WithDelta(delta); err == nil {
			return combined
		}
	}
	return crl
}

// parseCRLFile reads the CRL file data of issuer as the proxy does (see
// store.ParseCRLFile).
func parseCRLFile(data []byte, issuer *x509.Certificate) (*revoke.CRL, error) {
	return store.ParseCRLFile(data, issuer)
}

// Unpublished returns, in serial order, the serials of the certificates
// that the revocation log holds revoked but crl does not list with that
// reason: revocations whose publishing was interrupted (a wrong CA key
// password, a kill, a full disk). Certificates expired for longer than
// ExpiredGrace at Now() are left out, as PublishCRL leaves them off.
func (c *CA) Unpublished(crl *revoke.CRL) ([]string, error) {
	events, err := c.revokedState()
	if err != nil {
		return nil, err
	}
	now := c.Now()
	var out []string
	serial := new(big.Int)
	for i := range events {
		ev := &events[i]
		if now.Sub(unixTime(ev.NotAfter)) > ExpiredGrace {
			continue
		}
		if r, ok := crl.ReasonOf(serial.SetBytes(ev.Serial[:])); !ok || r != revoke.Reason(ev.Reason) {
			out = append(out, ev.Hex())
		}
	}
	return out, nil
}

// onCRL reports whether the published CRL lists the revoked rec with its
// reason, or need not list it (expired for longer than ExpiredGrace). A
// missing or unreadable CRL lists nothing.
func (c *CA) onCRL(rec *Record) bool {
	if c.Now().Sub(rec.NotAfter) > ExpiredGrace {
		return true
	}
	crl, err := c.LoadCRL()
	if err != nil {
		return false
	}
	serial, err := ParseSerial(rec.Serial)
	if err != nil {
		return false
	}
	e, ok := crl.Lookup(serial)
	return ok && e.Reason.String() == rec.Reason
}

// LoggedRevocation returns the revocation of serial as the revocation log
// holds it, or nil when the log does not hold it revoked. The log is written
// before the record and the CRL, so it knows of a revocation that an
// interrupted revoke did not publish.
func (c *CA) LoggedRevocation(serial *big.Int) (*revoke.Entry, error) {
	events, err := c.revokedState()
	if err != nil {
		return nil, err
	}
	s := new(big.Int)
	for i := range events {
		ev := &events[i]
		if s.SetBytes(ev.Serial[:]).Cmp(serial) == 0 {
			return &revoke.Entry{Serial: new(big.Int).Set(serial), RevokedAt: unixTime(ev.RevokedAt), Reason: revoke.Reason(ev.Reason)}, nil
		}
	}
	return nil, nil
}
