package file

import (
	"errors"
	"fmt"
	"io/fs"
	"minica/ca/store"
)

// RevocationStamp is the stamp of db/revoked.log.
func (s *Store) RevocationStamp() (store.FileStamp, error) {
	info, err := s.dir.Root().Lstat(RevocationLog)
	if errors.Is(err, fs.ErrNotExist) {
		return store.FileStamp{}, nil
	}
	if err != nil {
		return store.FileStamp{}, fmt.Errorf("reading the revocation log %q: %w", s.dir.Join(RevocationLog), err)
	}
	return store.StampOf(info), nil
}
