package ca

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"minica/ca/store"
)

// ErrEmptyPrefix is returned by RecordsByNamePrefix for an empty prefix,
// which would name every certificate of the CA.
var ErrEmptyPrefix = errors.New("empty name prefix: it would match every certificate")

// RecordsByEmail returns the records of every certificate whose SANs hold
// the email address addr (an rfc822Name), oldest first, void ones left
// out; none is an empty list, not an error. An invalid address is an
// error naming it (see ValidateEmail).
//
// Addresses are compared case-insensitively, local part included, unlike
// the proxy's policy (which grants access and so reads the local part
// exactly, as RFC 5321 allows): what finds a person's certificates to
// revoke them must not miss one issued as "Simon@Example.com".
//
// It reads every record (see scanShards), on either engine: its cost
// grows with the database, as list's does.
func (c *CA) RecordsByEmail(addr string) ([]*Record, error) {
	if err := ValidateEmail(addr); err != nil {
		return nil, err
	}
	return c.recordsWhere(func(r *Record) bool { return hasEmail(r, addr) })
}

// RecordsByNamePrefix returns the records of every certificate whose name
// starts with prefix, compared exactly as names are, oldest first, void
// ones left out; none is an empty list, not an error. The prefix must be
// a valid name (every prefix of a valid name is one): an empty one gives
// ErrEmptyPrefix, an invalid one the error of ValidateName.
func (c *CA) RecordsByNamePrefix(prefix string) ([]*Record, error) {
	if prefix == "" {
		return nil, ErrEmptyPrefix
	}
	if err := ValidateName(prefix); err != nil {
		return nil, fmt.Errorf("name prefix: %w", err)
	}
	return c.recordsWhere(func(r *Record) bool { return strings.HasPrefix(r.Name, prefix) })
}

// hasEmail reports whether r's SANs hold the address addr, in any case.
func hasEmail(r *Record, addr string) bool {
	for _, san := range r.SANs {
		if e, ok := strings.CutPrefix(san, "email:"); ok && strings.EqualFold(e, addr) {
			return true
		}
	}
	return false
}

// recordsWhere returns the records but the void ones that match, oldest
// first. A record that does not decode fails it (run minica check): it
// might have matched.
func (c *CA) recordsWhere(match func(*Record) bool) ([]*Record, error) {
	var mu sync.Mutex
	var found []*Record
	_, err := c.scanShards(func(_ *planPart, r *Record) {
		if r.Status == StatusVoid || !match(r) {
			return
		}
		mu.Lock()
		found = append(found, r)
		mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	store.SortByIssued(found)
	return found, nil
}
