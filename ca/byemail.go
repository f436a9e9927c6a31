package ca

import (
	"errors"
	"strings"
	"sync"

	"minica/ca/store"
)

// ErrEmptyPrefix is returned by ValidateNamePrefix (and so by
// RecordsByNamePrefix) for an empty prefix, which would name every
// certificate of the CA.
var ErrEmptyPrefix = errors.New("empty name prefix: it would match every certificate")

// RecordsByEmail returns the records of every certificate whose SANs hold
// the email address addr (an rfc822Name), oldest first, void ones left
// out; none is an empty list, not an error. An invalid address is an
// error naming it (see ValidateEmail). A pending record is never found:
// it holds no SANs until its issuance completes (see SettledRecords).
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
// ones left out; none is an empty list, not an error. An invalid prefix
// gives the error of ValidateNamePrefix.
func (c *CA) RecordsByNamePrefix(prefix string) ([]*Record, error) {
	if err := ValidateNamePrefix(prefix); err != nil {
		return nil, err
	}
	return c.recordsWhere(func(r *Record) bool { return strings.HasPrefix(r.Name, prefix) })
}

// ValidateNamePrefix checks that prefix can start a certificate name: it
// must be a valid name itself (every prefix of a valid name is one). An
// empty one gives ErrEmptyPrefix, an invalid one the error of
// ValidateName (ErrNameAt for one holding "@").
func ValidateNamePrefix(prefix string) error {
	if prefix == "" {
		return ErrEmptyPrefix
	}
	return ValidateName(prefix)
}

// SettledRecords returns what find (RecordsByEmail or RecordsByNamePrefix
// with its argument) finds, for a revocation of them all under the lock
// the caller holds. Every interrupted issuance of the CA is settled first
// (FinishInterrupted on the names of the pending records, what it did in
// finished): a pending record holds no SANs yet, so no search can tell
// whose it is, and Check would otherwise complete it later into a
// certificate the revocation missed.
func (c *CA) SettledRecords(find func() ([]*Record, error)) (recs []*Record, finished []string, err error) {
	pending, err := c.recordsWhere(func(r *Record) bool { return r.Status == StatusPending })
	if err != nil {
		return nil, nil, err
	}
	settled := map[string]bool{}
	for _, r := range pending {
		if settled[r.Name] {
			continue
		}
		settled[r.Name] = true
		done, err := c.FinishInterrupted(r.Name)
		if err != nil {
			return nil, finished, err
		}
		finished = append(finished, done...)
	}
	recs, err = find()
	return recs, finished, err
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
