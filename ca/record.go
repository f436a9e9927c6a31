package ca

import (
	"fmt"
	"iter"
	"math/big"
	"minica/ca/store"
	"strings"
)

// Status is the state of a record in the issuance database.
type Status = store.Status

// Record statuses (see package store).
const (
	StatusPending = store.StatusPending
	StatusValid   = store.StatusValid
	StatusRevoked = store.StatusRevoked
	StatusExpired = store.StatusExpired
	StatusVoid    = store.StatusVoid
)

// Record describes one certificate the CA signed (or reserved a serial for).
type Record = store.Record

// CorruptRecordError is returned for a record that does not decode.
type CorruptRecordError = store.CorruptRecordError

// ErrNotFound is returned when no record matches a name or serial.
var ErrNotFound = store.ErrNotFound

// SerialHex formats a serial number as records name it.
func SerialHex(n *big.Int) string { return store.SerialHex(n) }

// ParseSerial parses a serial number in hex, in any case, with or without
// colons and a 0x prefix ("5F:3C:..", "5f3c..").
func ParseSerial(s string) (*big.Int, error) {
	h := strings.ReplaceAll(strings.TrimPrefix(strings.ToLower(s), "0x"), ":", "")
	n, ok := new(big.Int).SetString(h, 16)
	if h == "" || !ok || n.Sign() <= 0 || n.BitLen() > 159 {
		return nil, fmt.Errorf("invalid serial %s: want a positive hex number, with or without colons", printable(s))
	}
	return n, nil
}

func certDir(name string) string { return store.CertDir(name) }

// putRecord replaces an existing record durably.
func (c *CA) putRecord(r *Record) error { return c.db.PutRecord(r) }

// Record returns the record of a serial number, or an error matching
// ErrNotFound.
func (c *CA) Record(serial *big.Int) (*Record, error) {
	hex := SerialHex(serial)
	if len(hex) != 32 {
		return nil, fmt.Errorf("serial %x: %w", serial, ErrNotFound)
	}
	return c.db.Record(hex)
}

// recordHex is Record for a serial in 32 hex digits.
func (c *CA) recordHex(hex string) (*Record, error) { return c.db.Record(hex) }

// RecordsByName returns the records of every certificate issued under name,
// oldest first; serials reserved for it that never became a certificate
// (void) are left out. In the file store the records are found through the
// name index (see nameIndexDir), so that it costs one file read per
// certificate of the name, whatever the database size.
func (c *CA) RecordsByName(name string) ([]*Record, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	return c.db.RecordsByName(name)
}

// Records iterates over every record in the database in serial order, so
// that a million records stream in constant memory. A record that does not
// decode is yielded as a *CorruptRecordError with a nil record, and
// iteration goes on if the consumer does; any other error ends it.
func (c *CA) Records() iter.Seq2[*Record, error] { return c.db.Records() }
