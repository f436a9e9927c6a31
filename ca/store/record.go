package store

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Profile is a certificate profile as a record names it (the CA defines
// the profiles and their rules).
type Profile string

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
	// ACMEAccount is the ACME account (of serve/acme) that ordered the
	// certificate; empty for one issued otherwise.
	ACMEAccount string `json:"acme_account,omitempty"`
	// Device is the name a person gave the device the certificate is for
	// when they got it by signing in (serve/signin): free text such as
	// "simon's laptop". Empty for a certificate issued otherwise.
	Device string `json:"device,omitempty"`
}

// StatusAt returns the record's status at time t: StatusExpired for a valid
// certificate past its NotAfter, the stored status otherwise.
func (r *Record) StatusAt(t time.Time) Status {
	if r.Status == StatusValid && t.After(r.NotAfter) {
		return StatusExpired
	}
	return r.Status
}

// SerialHex formats a serial number as record files name it.
func SerialHex(n *big.Int) string { return fmt.Sprintf("%032x", n) }

// CertDir returns the directory of name's certificates, relative to the
// CA directory.
func CertDir(name string) string { return path.Join("certs", name) }

// CertPath returns the path of a record's certificate, relative to the CA
// directory.
func (r *Record) CertPath() string { return path.Join(CertDir(r.Name), r.Serial+".crt") }

// KeyPath returns the path of a record's private key, relative to the CA
// directory; it exists only when HasKey.
func (r *Record) KeyPath() string { return path.Join(CertDir(r.Name), r.Serial+".key") }

// ChainPath returns the path of a record's certificate plus CA chain,
// relative to the CA directory.
func (r *Record) ChainPath() string { return path.Join(CertDir(r.Name), r.Serial+".chain.pem") }

// EncodeRecord encodes r as one JSON line, the form every engine keeps.
func EncodeRecord(r *Record) []byte {
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

// Issued reports whether the record's certificate exists: its issuance
// neither is pending nor was voided.
func (r *Record) Issued() bool { return r.Status != StatusPending && r.Status != StatusVoid }

// SortByIssued sorts records oldest first, by issuance time then serial.
func SortByIssued(recs []*Record) {
	slices.SortFunc(recs, func(a, b *Record) int {
		if c := a.IssuedAt.Compare(b.IssuedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Serial, b.Serial)
	})
}

// IsSerialHex reports whether s is a serial as records name it: 32
// lowercase hex digits.
func IsSerialHex(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// ErrNameAt is returned, wrapped, by ValidateName for a name holding "@".
var ErrNameAt = errors.New(`a name cannot hold "@"`)

// ValidateName checks that name can name a certificate: it is used as a
// directory name inside the CA directory, so it must match
// [A-Za-z0-9][A-Za-z0-9._-]{0,63}. That excludes "..", "a/b", ".x" and NUL.
//
// A name holding "@" gets its own error, ErrNameAt: it is usually an email
// address given where a name was wanted.
func ValidateName(name string) error {
	if strings.Contains(name, "@") {
		return fmt.Errorf("invalid name %s: %w", printable(name), ErrNameAt)
	}
	if !isName(name) {
		return fmt.Errorf("invalid name %s: want 1 to 64 characters from A-Z a-z 0-9 . _ -, starting with a letter or digit", printable(name))
	}
	return nil
}

// isName matches [A-Za-z0-9][A-Za-z0-9._-]{0,63}, by hand: a regular
// expression would be compiled at the start of every minica process,
// whether or not it checks a name.
func isName(name string) bool {
	if len(name) == 0 || len(name) > 64 || name[0] == '.' || name[0] == '_' || name[0] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// printable quotes s for an error message without letting control
// characters reach the terminal.
func printable(s string) string { return strconv.QuoteToASCII(s) }

// IsEnrollmentID reports whether s is an enrollment's ID: 12 lowercase hex
// digits.
func IsEnrollmentID(s string) bool {
	if len(s) != 12 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}
