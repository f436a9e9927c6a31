package ca

import (
	"errors"
	"fmt"
	"time"
)

// ErrNoServerCert is returned by ServerCert when a name has no server
// certificate that is valid now and whose key minica holds.
var ErrNoServerCert = errors.New("no valid server certificate with a key")

// NoServerCertError is the error of ServerCert. Records are those of the
// name, oldest first, and Newest is the newest server certificate among
// them (nil when there is none), so that a caller can say why it is not
// usable. It matches ErrNoServerCert.
type NoServerCertError struct {
	Name    string
	Records []*Record
	Newest  *Record
}

func (e *NoServerCertError) Error() string {
	return fmt.Sprintf("server certificate %q: %v", e.Name, ErrNoServerCert)
}

// Unwrap makes errors.Is(err, ErrNoServerCert) true.
func (e *NoServerCertError) Unwrap() error { return ErrNoServerCert }

// ServerCert returns the record of the certificate to serve for name at
// now: the newest server certificate issued under it that is valid at now
// (not revoked, not expired, and not before its NotBefore) and whose
// private key the CA directory holds. Its files are at ChainPath and
// KeyPath. Records keep issuance times to the second: of several issued in
// the same second, the one with the highest serial wins. Every command that
// serves or configures a server certificate asks this; it fails with a
// *NoServerCertError when there is none, or with the error of reading the
// records.
func (c *CA) ServerCert(name string, now time.Time) (*Record, error) {
	recs, err := c.RecordsByName(name)
	if err != nil {
		return nil, err
	}
	var newest *Record
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.Profile != Server {
			continue
		}
		if r.HasKey && r.StatusAt(now) == StatusValid && !now.Before(r.NotBefore) {
			return r, nil
		}
		if newest == nil {
			newest = r
		}
	}
	return nil, &NoServerCertError{Name: name, Records: recs, Newest: newest}
}
