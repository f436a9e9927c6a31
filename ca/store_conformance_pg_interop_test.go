//go:build interop

package ca

import (
	"testing"

	"minica/ca/store/pg"
	"minica/internal/pgtest"
)

// storeHarnessPG returns the PostgreSQL store of a new CA, in a database
// of its own.
func storeHarnessPG(t *testing.T) *storeHarness {
	url := pgtest.New(t)
	c, signer := newTestCA(t, InitOptions{Store: url})
	s := c.db.(*pg.Store)
	return &storeHarness{db: s, cert: c.Cert, signer: signer, open: reopener(c),
		loseLock: func(t *testing.T) { killBackend(t, url, s.LockSessionPID()) },
	}
}

func TestPGStoreConformance(t *testing.T) { runStoreConformance(t, storeHarnessPG) }
