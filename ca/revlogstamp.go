package ca

import (
	"errors"
	"fmt"
	"io/fs"
)

// RevocationLogStamp returns the stamp of the revocation log (db/revoked.log)
// without reading it, so that a long-running reader notices a revocation
// made by another process at the cost of one lstat. A CA that never revoked
// anything has no log: the zero stamp and no error.
func (c *CA) RevocationLogStamp() (FileStamp, error) {
	if c.db != nil {
		return c.db.revocationStamp()
	}
	info, err := c.dir.root.Lstat(revlogFile)
	if errors.Is(err, fs.ErrNotExist) {
		return FileStamp{}, nil
	}
	if err != nil {
		return FileStamp{}, fmt.Errorf("reading the revocation log %q: %w", c.dir.Join(revlogFile), err)
	}
	return stampOf(info), nil
}
