package revoke

import (
	"crypto/x509"
	"iter"
	"math/big"
	"time"
)

// CRL is a parsed, signature-checked certificate revocation list. It keeps
// the CRL-wide fields and a compact table of the revoked serials, not the
// DER it came from. A CRL is immutable and safe for concurrent use.
type CRL struct {
	issuer     *x509.Certificate
	number     *big.Int
	thisUpdate time.Time
	nextUpdate time.Time
	table      serialTable
	// deltaBase is the base CRL number of a delta CRL, nil for a complete
	// CRL. delta is the delta CRL applied to a complete one (WithDelta),
	// nil for none; count is then the number of serials the two revoke.
	deltaBase *big.Int
	delta     *CRL
	count     int
}

// Issuer returns the CA certificate the CRL was verified against.
func (c *CRL) Issuer() *x509.Certificate { return c.issuer }

// Number returns a copy of the CRL number: with a delta CRL applied
// (WithDelta), the delta's.
func (c *CRL) Number() *big.Int { return new(big.Int).Set(c.latest().number) }

// ThisUpdate returns when the CRL was issued: with a delta CRL applied,
// when the delta was.
func (c *CRL) ThisUpdate() time.Time { return c.latest().thisUpdate }

// NextUpdate returns when the next CRL is due; after it this one is
// expired. With a delta CRL applied it is the earlier of the two, for
// both must be current (RFC 5280 section 6.3.3).
func (c *CRL) NextUpdate() time.Time {
	if c.delta != nil && c.delta.nextUpdate.Before(c.nextUpdate) {
		return c.delta.nextUpdate
	}
	return c.nextUpdate
}

// latest is the applied delta CRL, else c.
func (c *CRL) latest() *CRL {
	if c.delta != nil {
		return c.delta
	}
	return c
}

// Len returns the number of revoked certificates listed: with a delta CRL
// applied, the number the two revoke together.
func (c *CRL) Len() int {
	if c.delta != nil {
		return c.count
	}
	return c.table.len()
}

// Lookup returns the entry for serial and true if the CRL lists it, else
// the zero Entry and false. With a delta CRL applied, the delta's entry
// wins, and its removeFromCRL lists nothing. The returned entry's Serial is
// a copy of serial.
func (c *CRL) Lookup(serial *big.Int) (Entry, bool) {
	if c.delta != nil {
		if i := c.delta.table.find(serial); i >= 0 {
			if c.delta.table.reason(i) == RemoveFromCRL {
				return Entry{}, false
			}
			return c.delta.table.entry(i, new(big.Int).Set(serial)), true
		}
	}
	i := c.table.find(serial)
	if i < 0 {
		return Entry{}, false
	}
	return c.table.entry(i, new(big.Int).Set(serial)), true
}

// ReasonOf returns the reason of serial's entry and true if the CRL lists
// it, as Lookup does, without allocating: for a caller that looks up a
// million serials.
func (c *CRL) ReasonOf(serial *big.Int) (Reason, bool) {
	if c.delta != nil {
		if i := c.delta.table.find(serial); i >= 0 {
			r := c.delta.table.reason(i)
			return r, r != RemoveFromCRL
		}
	}
	i := c.table.find(serial)
	if i < 0 {
		return 0, false
	}
	return c.table.reason(i), true
}

// IsRevoked reports whether the CRL lists serial. It takes O(log n) time and
// does not allocate for non-negative serials.
func (c *CRL) IsRevoked(serial *big.Int) bool {
	if c.delta != nil {
		if i := c.delta.table.find(serial); i >= 0 {
			return c.delta.table.reason(i) != RemoveFromCRL
		}
	}
	return c.table.find(serial) >= 0
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Entries returns the listed entries in ascending order of their serials'
// DER encoding (numeric order for the positive serials RFC 5280 allows).
// With a delta CRL applied, they are those Lookup finds, in numeric order;
// a delta CRL alone lists its removeFromCRL entries too.
func (c *CRL) Entries() iter.Seq[Entry] {
	if c.delta != nil {
		return c.mergedEntries()
	}
	return func(yield func(Entry) bool) {
		for i := range c.table.len() {
			if !yield(c.table.entry(i, c.table.serial(i))) {
				return
			}
		}
	}
}
