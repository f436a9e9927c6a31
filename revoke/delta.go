package revoke

import (
	"bytes"
	"fmt"
	"iter"
	"math/big"
)

// DeltaBase returns the base CRL number of a delta CRL (ParseDelta): the
// complete CRL it lists the changes since. It is nil for a complete CRL,
// with a delta applied or not.
func (c *CRL) DeltaBase() *big.Int {
	if c.deltaBase == nil {
		return nil
	}
	return new(big.Int).Set(c.deltaBase)
}

// Complete returns the complete CRL of c, without the delta CRL applied
// to it, if any.
func (c *CRL) Complete() *CRL {
	if c.delta == nil {
		return c
	}
	base := *c
	base.delta, base.count = nil, 0
	return &base
}

// Delta returns the delta CRL applied to c (WithDelta), or nil.
func (c *CRL) Delta() *CRL { return c.delta }

// WithDelta returns c, a complete CRL, with the delta CRL d applied (RFC
// 5280 section 5.2.4): what the two list together, the delta's entries
// winning and its removeFromCRL entries lifting the base's. A delta already
// applied to c is replaced. The result's number and thisUpdate are d's, its
// nextUpdate the earlier of the two. c is not changed, and its serial table
// is shared, not copied.
//
// d applies when, as OpenSSL's -use_deltas also requires, it was verified
// against the same CA as c, its base CRL number is at most c's number, and
// its own number is above c's. Otherwise the error wraps ErrDeltaMismatch
// (ErrNotDelta for a complete CRL given as d): a delta against a later base
// cannot say what changed between c and that base.
func (c *CRL) WithDelta(d *CRL) (*CRL, error) {
	base := c.Complete()
	if base.deltaBase != nil {
		return nil, fmt.Errorf("%w: a delta CRL (number %s) has no delta of its own", ErrDeltaMismatch, base.number)
	}
	if d.deltaBase == nil {
		return nil, fmt.Errorf("%w: CRL number %s", ErrNotDelta, d.number)
	}
	switch {
	case !bytes.Equal(base.issuer.Raw, d.issuer.Raw):
		return nil, fmt.Errorf("%w: the delta CRL is of %q, the complete CRL of %q", ErrDeltaMismatch,
			d.issuer.Subject.String(), base.issuer.Subject.String())
	case d.deltaBase.Cmp(base.number) > 0:
		return nil, fmt.Errorf("%w: the delta CRL (number %s) lists the changes since CRL %s, later than the complete CRL (number %s)",
			ErrDeltaMismatch, d.number, d.deltaBase, base.number)
	case d.number.Cmp(base.number) <= 0:
		return nil, fmt.Errorf("%w: the delta CRL (number %s) is not newer than the complete CRL (number %s)",
			ErrDeltaMismatch, d.number, base.number)
	}
	out := *base
	out.delta, out.count = d, base.table.len()
	for i := range d.table.len() {
		inBase := base.table.find(d.table.serial(i)) >= 0
		switch {
		case d.table.reason(i) == RemoveFromCRL && inBase:
			out.count--
		case d.table.reason(i) != RemoveFromCRL && !inBase:
			out.count++
		}
	}
	return &out, nil
}

// mergedEntries yields the entries of a CRL with a delta applied, in
// numeric order of their serials: the base's that the delta leaves alone,
// and the delta's but its removeFromCRL ones.
func (c *CRL) mergedEntries() iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		d := c.delta
		j := 0
		// nextDelta yields the delta's entries below limit (all for nil).
		nextDelta := func(limit *big.Int) bool {
			for ; j < d.table.len(); j++ {
				s := d.table.serial(j)
				if limit != nil && s.Cmp(limit) >= 0 {
					return true
				}
				if d.table.reason(j) != RemoveFromCRL && !yield(d.table.entry(j, s)) {
					return false
				}
			}
			return true
		}
		for i := range c.table.len() {
			s := c.table.serial(i)
			if !nextDelta(s) {
				return
			}
			if d.table.find(s) >= 0 {
				continue // the delta's entry, or its removal, wins
			}
			if !yield(c.table.entry(i, s)) {
				return
			}
		}
		nextDelta(nil)
	}
}
