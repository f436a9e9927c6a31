package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
// with force it is replaced atomically (temporary file and rename).
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
			err = replaceFile(f.path, f.data, f.perm)
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
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return withHint(fmt.Errorf("%s %w", path, errOutExists), "pass --force to replace it, or choose another output file")
	}
	if err != nil {
		return fmt.Errorf("creating %q: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("writing %q: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("writing %q: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("writing %q: %w", path, err)
	}
	return nil
}

// replaceFile writes data to a new temporary file next to path (O_EXCL,
// perm) and renames it over path, so that a reader never sees a partial
// file and the old file's mode is not inherited.
func replaceFile(path string, data []byte, perm os.FileMode) error {
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.%d.tmp", filepath.Base(path), os.Getpid()))
	if err := createExclusive(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replacing %q: %w", path, err)
	}
	return nil
}
