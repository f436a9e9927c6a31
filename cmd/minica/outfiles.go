package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

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

// writeOutFiles writes every file, or none, also across a kill: all
// targets are checked before anything is written, and the files are
// written as one atomicfile.CreateGroup, which a later run for the same
// files completes (if a file had taken its name) or removes (if none had)
// before it writes. Without force a target must not exist; with force it
// is replaced, so that the old file's mode is not inherited.
func writeOutFiles(files []outFile, force bool) error {
	if err := checkOutFiles(files, force); err != nil {
		return err
	}
	group := make([]atomicfile.File, len(files))
	for i, f := range files {
		group[i] = atomicfile.File{Name: f.path, Data: f.data, Perm: f.perm}
	}
	err := atomicfile.CreateGroup(atomicfile.OS, group, force)
	if errors.Is(err, fs.ErrExist) {
		return withHint(err, "pass --force to replace it, or choose another output file")
	}
	return err
}

// checkOutFiles fails, without force, when a target exists.
func checkOutFiles(files []outFile, force bool) error {
	if force {
		return nil
	}
	for _, f := range files {
		if _, err := os.Lstat(f.path); err == nil {
			return withHint(fmt.Errorf("%s %w", f.path, errOutExists), "pass --force to replace it, or choose another output file")
		}
	}
	return nil
}

// settleOutFiles finishes what a killed earlier run left of a group of
// output files (see writeOutFiles), saying what it found, before the
// targets are checked.
func settleOutFiles(e *env, paths ...string) error {
	paths = slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return p == "" })
	settled, err := atomicfile.SettleGroup(atomicfile.OS, paths)
	switch settled {
	case atomicfile.SettledCompleted:
		fmt.Fprintf(e.stderr, "minica: note: an earlier run that was interrupted had begun to write %s: they are now all in place\n", strings.Join(paths, " and "))
	case atomicfile.SettledRemoved:
		fmt.Fprintf(e.stderr, "minica: note: removed what an earlier run that was interrupted had begun to write for %s\n", strings.Join(paths, " and "))
	}
	return err
}
