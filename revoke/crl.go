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
}

// Issuer returns the CA certificate the CRL was verified against.
func (c *CRL) Issuer() *x509.Certificate { return c.issuer }

// Number returns a copy of the CRL number.
func (c *CRL) Number() *big.Int { return new(big.Int).Set(c.number) }

// ThisUpdate returns when the CRL was issued.
func (c *CRL) ThisUpdate() time.Time { return c.thisUpdate }

// NextUpdate returns when the next CRL is due; after it this one is expired.
func (c *CRL) NextUpdate() time.Time { return c.nextUpdate }

// Len returns the number of revoked certificates listed.
func (c *CRL) Len() int { return c.table.len() }

// Lookup returns the entry for serial and true if the CRL lists it. The
// returned entry's Serial is a copy of serial.
func (c *CRL) Lookup(serial *big.Int) (Entry, bool) {
	i := c.table.find(serial)
	if i < 0 {
		return Entry{}, false
	}
	return c.table.entry(i, new(big.Int).Set(serial)), true
}

// IsRevoked reports whether the CRL lists serial. It takes O(log n) time and
// does not allocate for non-negative serials.
func (c *CRL) IsRevoked(serial *big.Int) bool {
	return c.table.find(serial) >= 0
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Entries returns the listed entries in ascending order of their serials'
// DER encoding (numeric order for the positive serials RFC 5280 allows).
func (c *CRL) Entries() iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		for i := range c.table.len() {
			if !yield(c.table.entry(i, c.table.serial(i))) {
				return
			}
		}
	}
}
