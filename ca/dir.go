package ca

import "minica/internal/cadir"

// Dir is the CA directory, reached through an os.Root, with durable
// writes (see package cadir).
type Dir = cadir.Dir

// NewFile is a file for Dir.CreateNewSynced.
type NewFile = cadir.NewFile

// OpenDir opens the directory at p.
func OpenDir(p string) (*Dir, error) { return cadir.Open(p) }

// isTemp reports whether a base name is one of WriteAtomic's temporary files.
func isTemp(base string) bool { return cadir.IsTemp(base) }
