package ca

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/big"
	"path"
	"slices"
	"strings"
	"time"
)

// Status is the state of a record in the issuance database.
type Status string

// Record statuses. Expired is never stored: it is derived from NotAfter.
const (
	// StatusPending: the serial is reserved and the certificate may be
	// signed, but issuance has not finished. Check completes or voids it.
	StatusPending Status = "pending"
	StatusValid   Status = "valid"
	StatusRevoked Status = "revoked"
	StatusExpired Status = "expired"
	// StatusVoid: issuance was interrupted before the certificate reached
	// the disk; the serial stays reserved forever.
	StatusVoid Status = "void"
)

// Record describes one certificate the CA signed (or reserved a serial for).
type Record struct {
	Serial      string    `json:"serial"` // 32 lowercase hex digits
	Name        string    `json:"name"`
	Profile     Profile   `json:"profile"`
	Status      Status    `json:"status"`
	Subject     string    `json:"subject,omitempty"` // RFC 4514
	SANs        []string  `json:"sans,omitempty"`    // "dns:..", "ip:..", "email:..", "uri:.."
	NotBefore   time.Time `json:"not_before,omitzero"`
	NotAfter    time.Time `json:"not_after,omitzero"`
	Fingerprint string    `json:"sha256,omitempty"` // of the DER certificate, lowercase hex
	HasKey      bool      `json:"has_key"`          // minica generated and stored the key
	IssuedAt    time.Time `json:"issued_at"`
	RevokedAt   time.Time `json:"revoked_at,omitzero"`
	Reason      string    `json:"reason,omitempty"` // RFC 5280 reason name
	// RenewalOf is the serial of the certificate this one renews, and
	// RenewedBy the serial of its newest successor (see CA.Renew). Records
	// written before renewal existed have neither.
	RenewalOf string `json:"renewal_of,omitempty"`
	RenewedBy string `json:"renewed_by,omitempty"`
}

// StatusAt returns the record's status at time t: StatusExpired for a valid
// certificate past its NotAfter, the stored status otherwise.
func (r *Record) StatusAt(t time.Time) Status {
	if r.Status == StatusValid && t.After(r.NotAfter) {
		return StatusExpired
	}
	return r.Status
}

// ErrNotFound is returned when no record matches a name or serial.
var ErrNotFound = errors.New("no such certificate")

// SerialHex formats a serial number as record files name it.
func SerialHex(n *big.Int) string { return fmt.Sprintf("%032x", n) }

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

func recordPath(serial string) string { return path.Join("db", serial[:2], serial+".json") }

func certDir(name string) string { return path.Join("certs", name) }

// CertPath returns the path of a record's certificate, relative to the CA
// directory.
func (r *Record) CertPath() string { return path.Join(certDir(r.Name), r.Serial+".crt") }

// KeyPath returns the path of a record's private key, relative to the CA
// directory; it exists only when HasKey.
func (r *Record) KeyPath() string { return path.Join(certDir(r.Name), r.Serial+".key") }

// ChainPath returns the path of a record's certificate plus CA chain,
// relative to the CA directory.
func (r *Record) ChainPath() string { return path.Join(certDir(r.Name), r.Serial+".chain.pem") }

func encodeRecord(r *Record) []byte {
	b, _ := json.Marshal(r) // a Record always marshals
	return append(b, '\n')
}

// CorruptRecordError is returned for a record file that does not decode.
type CorruptRecordError struct {
	File   string // the path, for messages
	Serial string // from the file name
	Err    error
}

func (e *CorruptRecordError) Error() string {
	return fmt.Sprintf("corrupt record %q: %v", e.File, e.Err)
}

// Unwrap returns the decoding error.
func (e *CorruptRecordError) Unwrap() error { return e.Err }

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

func sortByIssued(recs []*Record) {
	slices.SortFunc(recs, func(a, b *Record) int {
		if c := a.IssuedAt.Compare(b.IssuedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Serial, b.Serial)
	})
}

// Records iterates over every record in the database in serial order, so
// that a million records stream in constant memory. A record that does not
// decode is yielded as a *CorruptRecordError with a nil record, and
// iteration goes on if the consumer does; any other error ends it.
func (c *CA) Records() iter.Seq2[*Record, error] { return c.db.Records() }
