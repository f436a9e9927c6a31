package ca

import (
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"slices"
	"time"

	"minica/ca/store"
	"minica/revoke"
)

// Files of the published delta CRL, relative to the CA directory.
const (
	DeltaCRLPEMFile = store.DeltaCRLPEMFile // the current delta CRL, PEM
	DeltaCRLDERFile = store.DeltaCRLDERFile // the same delta CRL, DER
)

// Defaults of DeltaSettings, used for a field left zero.
const (
	// DefaultDeltaFrom: a CA signs delta CRLs once its complete CRL lists
	// this many certificates (about 500 KB): below, a complete CRL costs
	// little and reaches every reader of crl.pem at once.
	DefaultDeltaFrom = 10_000
	// DefaultDeltaMaxEntries bounds a delta CRL (about 50 KB, what a
	// replica downloads at each revocation); past it, the next revocation
	// signs a complete CRL, the new base.
	DefaultDeltaMaxEntries = 1000
	// DefaultFullEvery is how old the base may grow before a revocation
	// signs a complete CRL again, so that readers of the complete CRL
	// alone (nginx, Apache, HAProxy) see revocations at least this often.
	DefaultFullEvery = time.Hour
)

// DeltaSettings say when a CA signs delta CRLs (RFC 5280 section 5.2.4;
// docs/crl.md). A revocation then signs a delta CRL that lists what changed
// since the base, the last complete CRL, instead of the whole list.
type DeltaSettings struct {
	// Off stops delta CRLs: every revocation signs a complete CRL.
	Off bool `json:"off,omitempty"`
	// From is the least number of entries of the complete CRL for deltas
	// (DefaultDeltaFrom when 0; -1 signs deltas from the first entry).
	From int `json:"from,omitempty"`
	// MaxEntries is the most entries of a delta (DefaultDeltaMaxEntries).
	MaxEntries int `json:"max_entries,omitempty"`
	// FullEvery is the longest time between complete CRLs while deltas are
	// signed (DefaultFullEvery).
	FullEvery Duration `json:"full_every,omitempty"`
	// URL, if set, is where the delta CRL is published (serve's
	// /crl-delta.der): complete CRLs carry it as their freshest CRL, which
	// OpenSSL needs to look for a delta.
	URL string `json:"url,omitempty"`
}

// FromEntries is From with its default applied: 0 means always.
func (d DeltaSettings) FromEntries() int {
	switch {
	case d.From < 0:
		return 0
	case d.From == 0:
		return DefaultDeltaFrom
	}
	return d.From
}

// MaxDeltaEntries is MaxEntries with its default applied.
func (d DeltaSettings) MaxDeltaEntries() int {
	if d.MaxEntries <= 0 {
		return DefaultDeltaMaxEntries
	}
	return d.MaxEntries
}

// FullInterval is FullEvery with its default applied.
func (d DeltaSettings) FullInterval() time.Duration {
	if d.FullEvery <= 0 {
		return DefaultFullEvery
	}
	return time.Duration(d.FullEvery)
}

// ErrNoDeltaCRL is returned when the CA has no current delta CRL.
var ErrNoDeltaCRL = errors.New("no current delta CRL")

// SetDeltaSettings replaces the CA's delta CRL settings. The caller must
// hold the lock (see Lock).
func (c *CA) SetDeltaSettings(d DeltaSettings) error {
	if d.From < -1 || d.MaxEntries < 0 || d.FullEvery < 0 {
		return fmt.Errorf("invalid delta CRL settings: from %d, max entries %d, full every %s: want from -1 or more, the others 0 or more",
			d.From, d.MaxEntries, FormatDuration(time.Duration(d.FullEvery)))
	}
	if d.URL != "" {
		if err := ValidateCRLURL(d.URL); err != nil {
			return err
		}
	}
	s := c.Settings
	s.DeltaCRL = d
	return c.saveSettings(s)
}

// deltaDue reports whether a complete CRL of entries entries is followed
// by delta CRLs.
func (c *CA) deltaDue(entries int) bool {
	d := c.Settings.DeltaCRL
	return !d.Off && entries >= d.FromEntries()
}

// DeltaCRL returns the current delta CRL, verified against the CA
// certificate and applying to the current complete CRL: the CRL signed
// last, nothing signed or reserved since (so its base is the base of the
// current complete CRL). It gives an error matching ErrNoDeltaCRL when
// there is none.
func (c *CA) DeltaCRL() (*revoke.CRL, error) {
	crl, _, err := c.PublishedDelta()
	return crl, err
}

// PublishedDelta is DeltaCRL that also gives the delta CRL's DER, what
// serve sends.
func (c *CA) PublishedDelta() (*revoke.CRL, []byte, error) {
	der, number, err := c.db.DeltaCRL()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, ErrNoDeltaCRL
	}
	if err != nil {
		return nil, nil, err
	}
	last, err := c.db.LastCRLNumber()
	if err != nil {
		return nil, nil, err
	}
	if number.Cmp(last) != 0 {
		return nil, nil, fmt.Errorf("%w: delta CRL %s is not the last CRL signed (%s)", ErrNoDeltaCRL, number, last)
	}
	crl, err := revoke.ParseDelta(der, c.Cert)
	if err != nil {
		return nil, nil, fmt.Errorf("delta CRL %s: %w", number, err)
	}
	return crl, der, nil
}

// DeltaCRLStamp changes whenever the delta CRL does, at the cost of a stat
// (or a query); it gives an error matching ErrNoDeltaCRL when there is
// none.
func (c *CA) DeltaCRLStamp() (FileStamp, error) {
	st, err := c.db.DeltaCRLStamp()
	if errors.Is(err, fs.ErrNotExist) {
		return st, ErrNoDeltaCRL
	}
	return st, err
}

// signDelta signs and saves a delta CRL against base listing entries,
// sorted by serial.
func (c *CA) signDelta(signer crypto.Signer, base *big.Int, entries []revoke.Entry) (*CRLInfo, error) {
	clock := c.Now()
	now := clock.UTC().Truncate(time.Second)
	lifetime := time.Duration(c.Settings.CRLLifetime)
	number, err := c.db.NextCRLNumber(clock)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b revoke.Entry) int { return a.Serial.Cmp(b.Serial) })
	der, err := revoke.Build(revoke.Params{
		Issuer: c.Cert, Signer: signer, Number: number, DeltaBase: base,
		ThisUpdate: now, NextUpdate: now.Add(lifetime),
	}, slices.Values(entries))
	if err != nil {
		return nil, err
	}
	if _, err := c.db.SaveDeltaCRL(number, der); err != nil {
		return nil, err
	}
	return &CRLInfo{Number: number, ThisUpdate: now, NextUpdate: now.Add(lifetime), Entries: len(entries), DER: der,
		Delta: true, Base: base, PEMFile: c.dir.Join(DeltaCRLPEMFile), DERFile: c.dir.Join(DeltaCRLDERFile)}, nil
}

// PublishRevocations publishes the change of state of recs, just recorded
// (revoked, or a hold lifted): when the CA signs delta CRLs and a current
// one applies (see DeltaCRL), a new delta CRL against the same base,
// listing the current delta's entries and recs; otherwise, or when that
// delta would pass the settings' MaxEntries, or the base is older than
// FullEvery, a complete CRL (PublishCRL). The caller must hold the lock.
//
// A delta costs what changed since the base, not the whole list: at a
// million revoked certificates, milliseconds instead of seconds. A lifted
// hold is listed as removeFromCRL, whether or not the base lists it.
func (c *CA) PublishRevocations(signer crypto.Signer, recs []*Record) (*CRLInfo, error) {
	d := c.Settings.DeltaCRL
	cur, err := c.DeltaCRL()
	if d.Off || err != nil || d.baseTooOld(cur, c.Now()) {
		return c.PublishCRL(signer, 0)
	}
	now := c.Now().UTC().Truncate(time.Second)
	changed := make(map[string]revoke.Entry, len(recs))
	for _, r := range recs {
		e, err := deltaEntry(r, now)
		if err != nil {
			return nil, err
		}
		changed[e.Serial.Text(16)] = e
	}
	entries := make([]revoke.Entry, 0, cur.Len()+len(recs))
	for e := range cur.Entries() {
		if _, ok := changed[e.Serial.Text(16)]; !ok {
			entries = append(entries, e)
		}
	}
	for _, e := range changed {
		entries = append(entries, e)
	}
	if len(entries) > d.MaxDeltaEntries() {
		return c.PublishCRL(signer, 0)
	}
	return c.signDelta(signer, cur.DeltaBase(), entries)
}

// deltaEntry is the entry of a delta CRL for r's revocation state.
func deltaEntry(r *Record, now time.Time) (revoke.Entry, error) {
	serial, err := ParseSerial(r.Serial)
	if err != nil {
		return revoke.Entry{}, err
	}
	if r.Status != StatusRevoked {
		return revoke.Entry{Serial: serial, RevokedAt: now, Reason: revoke.RemoveFromCRL}, nil
	}
	reason, err := revoke.ParseReason(r.Reason)
	if err != nil {
		return revoke.Entry{}, fmt.Errorf("record %s: %w", r.Serial, err)
	}
	at := r.RevokedAt.UTC()
	if at.After(now) { // the clock went back: listed at thisUpdate, as PublishCRL does
		at = now
	}
	return revoke.Entry{Serial: serial, RevokedAt: at, Reason: reason}, nil
}

// CompleteCRLDue reports whether a complete CRL should be signed at now
// so that readers of the complete CRL alone (nginx, Apache, HAProxy) see
// what delta, the current delta CRL (nil for none), lists: it lists
// something, and its base is older than the settings' FullEvery. serve's
// timer asks it, so that a revocation reaches them within FullEvery even
// when no other revocation follows it.
func (c *CA) CompleteCRLDue(delta *revoke.CRL, now time.Time) bool {
	return delta != nil && delta.Len() > 0 && c.Settings.DeltaCRL.baseTooOld(delta, now)
}

// baseTooOld reports whether the base of delta was signed longer than
// FullInterval before now, read from its number: PublishCRL numbers a CRL
// by its signing time in milliseconds, raised only when need be, so the
// age read is never more than the true one.
func (d DeltaSettings) baseTooOld(delta *revoke.CRL, now time.Time) bool {
	base := delta.DeltaBase()
	return base != nil && base.IsInt64() && now.Sub(time.UnixMilli(base.Int64())) > d.FullInterval()
}
