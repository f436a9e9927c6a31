package ca

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// tmpPrefix starts the name of every temporary file; Check removes leftovers.
const tmpPrefix = ".tmp-"

// Dir is a directory reached through an os.Root, with durable writes.
type Dir struct {
	root *os.Root
	path string
}

// OpenDir opens the directory at p.
func OpenDir(p string) (*Dir, error) {
	root, err := os.OpenRoot(p)
	if err != nil {
		return nil, err
	}
	return &Dir{root: root, path: p}, nil
}

// Path returns the directory's path as given to OpenDir.
func (d *Dir) Path() string { return d.path }

// Join returns the path of name inside the directory, for messages.
func (d *Dir) Join(name string) string { return d.path + string(os.PathSeparator) + name }

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// ReadFile reads name inside the directory.
func (d *Dir) ReadFile(name string) ([]byte, error) { return d.root.ReadFile(name) }

// Stat returns the FileInfo of name inside the directory.
func (d *Dir) Stat(name string) (fs.FileInfo, error) { return d.root.Stat(name) }

// MkdirAll creates name and its parents with mode 0700.
func (d *Dir) MkdirAll(name string) error { return d.root.MkdirAll(name, 0o700) }

// MkdirSub opens the directory name inside d, first creating it with mode
// 0700 when it is missing (its parent must exist); created reports whether
// it was new. Files in the result are reached with one system call each
// instead of one per path element. The caller closes it.
func (d *Dir) MkdirSub(name string) (sub *Dir, created bool, err error) {
	err = d.root.Mkdir(name, 0o700)
	created = err == nil
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, false, fmt.Errorf("creating %q: %w", d.Join(name), err)
	}
	root, err := d.root.OpenRoot(name)
	if err != nil {
		return nil, false, fmt.Errorf("opening %q: %w", d.Join(name), err)
	}
	return &Dir{root: root, path: d.Join(name)}, created, nil
}

// WriteAtomic replaces name with data durably: a temporary file in the same
// directory is created with mode perm and O_EXCL, written, synced, renamed
// over name, and the directory synced. The file's mode is never changed after
// it is written.
func (d *Dir) WriteAtomic(name string, data []byte, perm os.FileMode) error {
	return d.WriteAtomicFrom(name, perm, writeBytes(data))
}

// WriteAtomicFrom is WriteAtomic with the content written by write, for
// content too large to hold in memory twice.
func (d *Dir) WriteAtomicFrom(name string, perm os.FileMode, write func(io.Writer) error) error {
	if err := d.replace(name, write, perm); err != nil {
		return err
	}
	return d.SyncDir(path.Dir(name))
}

func writeBytes(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

// replace writes a synced temporary file and renames it over name.
func (d *Dir) replace(name string, write func(io.Writer) error, perm os.FileMode) error {
	f, tmp, err := d.writeTemp(name, write, perm, true)
	if err == nil {
		err = d.closeTemp(f, tmp)
	}
	if err != nil {
		return err
	}
	if err := d.root.Rename(tmp, name); err != nil {
		d.root.Remove(tmp)
		return fmt.Errorf("renaming %q: %w", d.Join(name), err)
	}
	return nil
}

// CreateExclusive writes a new file name durably and fails with an error
// matching fs.ErrExist when it already exists. The data is first written to a
// temporary file, so name never holds a partial file.
func (d *Dir) CreateExclusive(name string, data []byte, perm os.FileMode) error {
	f, err := d.createExclusive(name, data, perm, true)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing %q: %w", d.Join(name), err)
	}
	return d.SyncDir(path.Dir(name))
}

// CreateExclusiveLazily is CreateExclusive without any fsync, and it
// returns name open for writing at its end, so that the caller can append
// to it (and must close it). Other processes see name at once, all or
// nothing, but a power loss may lose it or leave it unreadable. Only for
// state that Check rebuilds.
func (d *Dir) CreateExclusiveLazily(name string, data []byte, perm os.FileMode) (*os.File, error) {
	return d.createExclusive(name, data, perm, false)
}

// createExclusive writes the file through a temporary one, which it links
// to name, and returns it open.
func (d *Dir) createExclusive(name string, data []byte, perm os.FileMode, sync bool) (*os.File, error) {
	f, tmp, err := d.writeTemp(name, writeBytes(data), perm, sync)
	if err != nil {
		return nil, err
	}
	// Link fails if name exists, unlike Rename, which would replace it.
	err = d.root.Link(tmp, name)
	if err != nil {
		err = fmt.Errorf("creating %q: %w", d.Join(name), err)
	}
	if rerr := d.root.Remove(tmp); err == nil && rerr != nil {
		err = fmt.Errorf("removing %q: %w", d.Join(tmp), rerr)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// NewFile is a file for CreateNewSynced.
type NewFile struct {
	Name string
	Data []byte
	Perm os.FileMode
}

// CreateNewSynced writes new files in d, in order, each created with
// O_EXCL (an error matching fs.ErrExist when one exists), then syncs them
// and d concurrently, so that their flushes to the disk overlap instead of
// queueing. When it fails it removes the files it created. A crash can
// leave partial files, so it is only for files that a record marks as not
// yet complete (see CA.Check).
func (d *Dir) CreateNewSynced(files ...NewFile) error {
	opened := make([]*os.File, 0, len(files))
	var err error
	for _, nf := range files {
		f, cerr := d.root.OpenFile(nf.Name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, nf.Perm)
		if cerr != nil {
			err = fmt.Errorf("creating %q: %w", d.Join(nf.Name), cerr)
			break
		}
		opened = append(opened, f)
		if _, werr := f.Write(nf.Data); werr != nil {
			err = fmt.Errorf("writing %q: %w", d.Join(nf.Name), werr)
			break
		}
	}
	if err == nil {
		err = d.syncWithDir(opened)
	}
	for _, f := range opened {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing %q: %w", d.Join(f.Name()), cerr)
		}
	}
	if err != nil {
		for _, nf := range files[:len(opened)] {
			d.root.Remove(nf.Name)
		}
	}
	return err
}

// syncWithDir fsyncs files and the directory d concurrently.
func (d *Dir) syncWithDir(files []*os.File) error {
	errs := make(chan error, len(files))
	for _, f := range files {
		go func() {
			if err := f.Sync(); err != nil {
				errs <- fmt.Errorf("syncing %q: %w", d.Join(f.Name()), err)
				return
			}
			errs <- nil
		}()
	}
	err := d.SyncDir(".")
	for range files {
		err = errors.Join(err, <-errs)
	}
	return err
}

// writeTemp writes a fresh temporary file beside name with write, synced
// when sync is set, and returns it open, with its name. On failure it
// removes the file.
func (d *Dir) writeTemp(name string, write func(io.Writer) error, perm os.FileMode, sync bool) (*os.File, string, error) {
	var b [8]byte
	rand.Read(b[:])
	tmp := path.Join(path.Dir(name), tmpPrefix+path.Base(name)+"-"+hex.EncodeToString(b[:]))
	f, err := d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return nil, "", fmt.Errorf("creating %q: %w", d.Join(tmp), err)
	}
	werr := write(f)
	if werr == nil && sync {
		werr = f.Sync()
	}
	if werr != nil {
		f.Close()
		d.root.Remove(tmp)
		return nil, "", fmt.Errorf("writing %q: %w", d.Join(tmp), werr)
	}
	return f, tmp, nil
}

// closeTemp closes a file from writeTemp, removing it when that fails.
func (d *Dir) closeTemp(f *os.File, tmp string) error {
	if err := f.Close(); err != nil {
		d.root.Remove(tmp)
		return fmt.Errorf("writing %q: %w", d.Join(tmp), err)
	}
	return nil
}

// SyncDir fsyncs the directory name, making renames and creations in it
// durable.
func (d *Dir) SyncDir(name string) error {
	f, err := d.root.Open(name)
	if err != nil {
		return fmt.Errorf("opening directory %q: %w", d.Join(name), err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("syncing directory %q: %w", d.Join(name), err)
	}
	return nil
}

// isTemp reports whether a base name is one of WriteAtomic's temporary files.
func isTemp(base string) bool { return strings.HasPrefix(base, tmpPrefix) }
