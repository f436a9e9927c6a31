package store

import (
	"crypto/x509"
	"errors"

	"minica/internal/cadir"
)

// ErrBadStore is returned for a store name that no engine takes.
var ErrBadStore = errors.New("invalid store")

// Engine opens the stores of one kind, each named by a URL. The file
// store needs none: every CA directory holds one. The program chooses the
// engines a CA may use (cmd/minica passes PostgreSQL's), so that package
// ca links no database driver and never asks which engine it holds.
type Engine interface {
	// Handles reports whether name is a URL of this engine's kind.
	Handles(name string) bool
	// Kind describes the engine's URLs in messages ("a postgres:// URL").
	Kind() string
	// Check validates name, one that Handles: an error matching
	// ErrBadStore, or one of the engine's, for a URL it would not open.
	Check(name string) error
	// Prepare readies the store name for a new CA, before anything of the
	// CA is written: its schema made current, and no CA's records in it
	// (ErrForeignStore).
	Prepare(name string) error
	// Migrate brings the schema of the store name to the one this binary
	// reads and writes, returning the versions before and after.
	Migrate(name string) (from, to int, err error)
	// Open opens the store name for the CA whose certificate is cert and
	// whose directory, dir, keeps the published copy of the current CRL.
	Open(name string, cert *x509.Certificate, dir *cadir.Dir, o OpenOptions) (Store, error)
}

// OpenOptions are the hooks of an opened store, for tests.
type OpenOptions struct {
	// Crashed, when set, is called after each file of the published copy
	// of a CRL is written; an error stops SaveCRL there, as a kill would.
	Crashed func(file string) error
}
