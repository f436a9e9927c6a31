package ca

import (
	"errors"
	"fmt"
	"time"
)

// ErrNoServerCert is returned by ServerCert when a name has no server
// certificate that is valid now and whose key minica holds.
var ErrNoServerCert = errors.New("no valid server certificate with a key")

// ServerCert returns the record of the newest server certificate issued
// under name that is valid at now (not revoked, within its validity) and
// whose private key the CA directory holds. Its files are at ChainPath and
// KeyPath. Records keep issuance times to the second: of several issued in
// the same second, the one with the highest serial wins. It fails with an error matching ErrNoServerCert when there is
// none, or with the error of reading the records.
func (c *CA) ServerCert(name string, now time.Time) (*Record, error) {
	recs, err := c.RecordsByName(name)
	if err != nil {
		return nil, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.Profile == Server && r.HasKey && r.StatusAt(now) == StatusValid && !now.Before(r.NotBefore) {
			return r, nil
		}
	}
	return nil, fmt.Errorf("server certificate %q: %w", name, ErrNoServerCert)
}
