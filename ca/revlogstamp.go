package ca

import (
	"errors"
	"fmt"
	"io/fs"
	"minica/ca/store"
)

// RevocationLogStamp returns the stamp of the revocation log (db/revoked.log)
// without reading it, so that a long-running reader notices a revocation
// made by another process at the cost of one lstat. A CA that never revoked
// anything has no log: the zero stamp and no error.
func (c *CA) RevocationLogStamp() (FileStamp, error) { return c.db.RevocationStamp() }

// RevocationStamp is the stamp of db/revoked.log.
func (s *fileStore) RevocationStamp() (FileStamp, error) {
	info, err := s.dir.Root().Lstat(revlogFile)
	if errors.Is(err, fs.ErrNotExist) {
		return FileStamp{}, nil
	}
	if err != nil {
		return FileStamp{}, fmt.Errorf("reading the revocation log %q: %w", s.dir.Join(revlogFile), err)
	}
	return store.StampOf(info), nil
}
