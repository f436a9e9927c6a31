package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"minica/internal/atomicfile"
)

// outFile is a file a command is about to write. Files holding a private
// key are 0600; certificates, CSRs and CRLs 0644.
type outFile struct {
	path string
	data []byte
	perm os.FileMode
}

// errOutExists is returned when an output file exists and --force is not
// set.
var errOutExists = errors.New("already exists")

// writeOutFiles writes every file, or none: all targets are checked before
// the first write, and files already written are removed if a later one
// fails. Without force a target must not exist and is created with O_EXCL;
// with force it is replaced atomically (see atomicfile.Replace), so that the
// old file's mode is not inherited.
func writeOutFiles(files []outFile, force bool) error {
	if !force {
		for _, f := range files {
			if _, err := os.Lstat(f.path); err == nil {
				return withHint(fmt.Errorf("%s %w", f.path, errOutExists), "pass --force to replace it, or choose another output file")
			}
		}
	}
	for i, f := range files {
		var err error
		if force {
			err = atomicfile.WriteFile(f.path, f.data, f.perm)
		} else {
			err = createExclusive(f.path, f.data, f.perm)
		}
		if err != nil {
			for _, done := range files[:i] {
				os.Remove(done.path)
			}
			return err
		}
	}
	return nil
}

// createExclusive creates path with O_EXCL and perm, writes and syncs data.
func createExclusive(path string, data []byte, perm os.FileMode) error {
	err := atomicfile.CreateNew(atomicfile.OS, path, perm, atomicfile.Bytes(data))
	if errors.Is(err, fs.ErrExist) {
		return withHint(fmt.Errorf("%s %w", path, errOutExists), "pass --force to replace it, or choose another output file")
	}
	return err
}
