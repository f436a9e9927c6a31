//go:build interop

package ca

import (
	"testing"

	"minica/ca/store/pg"
	"minica/ca/store/storetest"
	"minica/internal/pgtest"
)

// storeHarnessPG returns the PostgreSQL store of a new CA, in a database
// of its own.
func storeHarnessPG(t *testing.T) *storetest.Harness {
	url := pgtest.New(t)
	c, signer := newTestCA(t, InitOptions{Store: url})
	s := c.db.(*pg.Store)
	return &storetest.Harness{Store: s, Cert: c.Cert, Signer: signer, Dir: c.dir, Open: reopener(c),
		LoseLock: func(t *testing.T) { killBackend(t, url, s.LockSessionPID()) },
	}
}

func TestPGStoreConformance(t *testing.T) { storetest.Run(t, storeHarnessPG) }

func TestCopyStorePG(t *testing.T) { testCopyStore(t, storeHarnessPG(t)) }
