// Package cadir reaches the files of one directory (a CA directory)
// through an os.Root, so that no name can escape it, with durable atomic
// writes (package atomicfile), reads that leave access times and
// non-regular files alone, and a scan of a directory's small files in the
// fewest system calls.
package cadir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	"minica/internal/atomicfile"
	"minica/internal/regfile"
)

// Dir is a directory reached through an os.Root, with durable writes.
type Dir struct {
	root *os.Root
	fs   atomicfile.FS // root, for the writes of package atomicfile
	path string
}

// Open opens the directory at p.
func Open(p string) (*Dir, error) {
	root, err := os.OpenRoot(p)
	if err != nil {
		return nil, err
	}
	return &Dir{root: root, fs: atomicfile.Root(root, p), path: p}, nil
}

// Path returns the directory's path as given to Open.
func (d *Dir) Path() string { return d.path }

// Join returns the path of name inside the directory, for messages.
func (d *Dir) Join(name string) string { return d.path + string(os.PathSeparator) + name }

// Replaced reports whether the directory at d's path is no longer the one
// d holds open: it was removed, or another was put in its place (a restore
// from a backup, a rename over it). d keeps reading the directory it
// opened, so only a new Open of the path sees the replacement's files.
func (d *Dir) Replaced() bool {
	held, err := d.root.Stat(".")
	if err != nil {
		return true // the directory held is gone: lookups in it fail
	}
	now, err := os.Stat(d.path)
	return err != nil || !os.SameFile(held, now)
}

// Root returns the os.Root the directory is reached through.
func (d *Dir) Root() *os.Root { return d.root }

// FS returns the directory for the writes of package atomicfile.
func (d *Dir) FS() atomicfile.FS { return d.fs }

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// ReadFile reads name inside the directory, without updating its access
// time where the system allows (see oNoAtime). Like Open, it refuses what
// is not a regular file.
func (d *Dir) ReadFile(name string) ([]byte, error) {
	f, info, err := d.openInfo(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// +1: a read that fills the buffer finds a file that grew since; one
	// that does not is at the end (a regular file's reads are short only
	// there), which saves the read that would return EOF.
	buf := make([]byte, 0, info.Size()+1)
	n, err := f.Read(buf[:cap(buf)])
	buf = buf[:n]
	if err == io.EOF || (err == nil && n < cap(buf)) {
		return buf, nil
	}
	if err != nil {
		return buf, err
	}
	return ReadAppend(f, buf)
}

// Open opens name inside the directory for reading, without updating its
// access time where the system allows, and without waiting on a file that
// is not regular: a FIFO or device planted in the CA directory is refused
// with an error matching regfile.ErrNotRegular, where a
// plain open would wait for ever. The caller names the path.
func (d *Dir) Open(name string) (*os.File, error) {
	f, _, err := d.openInfo(name)
	return f, err
}

// openInfo is Open, with the FileInfo of the file opened.
func (d *Dir) openInfo(name string) (*os.File, fs.FileInfo, error) {
	return regfile.OpenInfo(func(flag int) (*os.File, error) {
		return openNoAtime(func(noAtime int) (*os.File, error) { return d.root.OpenFile(name, flag|noAtime, 0) })
	})
}

// openNoAtime opens a file for reading with open(flag), first with
// oNoAtime, then, when the kernel refuses it (EPERM: the file belongs to
// another user), without.
func openNoAtime[F any](open func(flag int) (F, error)) (F, error) {
	f, err := open(os.O_RDONLY | oNoAtime)
	if oNoAtime != 0 && errors.Is(err, syscall.EPERM) {
		f, err = open(os.O_RDONLY)
	}
	return f, err
}

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
	sub, err = d.OpenSub(name)
	if err != nil {
		return nil, false, fmt.Errorf("opening %q: %w", d.Join(name), err)
	}
	return sub, created, nil
}

// OpenSub opens the existing directory name inside d, as MkdirSub does
// without creating it. The caller closes it.
func (d *Dir) OpenSub(name string) (*Dir, error) {
	root, err := d.root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	return &Dir{root: root, fs: atomicfile.Root(root, d.Join(name)), path: d.Join(name)}, nil
}

// WriteAtomic replaces name with data durably: a temporary file in the same
// directory is created with mode perm and O_EXCL, written, synced, renamed
// over name, and the directory synced. The file's mode is never changed after
// it is written.
func (d *Dir) WriteAtomic(name string, data []byte, perm os.FileMode) error {
	return atomicfile.Replace(d.fs, name, perm, atomicfile.Bytes(data))
}

// WriteAtomicFrom is WriteAtomic with the content written by write, for
// content too large to hold in memory twice.
func (d *Dir) WriteAtomicFrom(name string, perm os.FileMode, write func(io.Writer) error) error {
	return atomicfile.Replace(d.fs, name, perm, write)
}

// CreateExclusive writes a new file name durably and fails with an error
// matching fs.ErrExist when it already exists. The data is first written to a
// temporary file, so name never holds a partial file.
func (d *Dir) CreateExclusive(name string, data []byte, perm os.FileMode) error {
	f, err := atomicfile.CreateLinked(d.fs, name, data, perm, true)
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
	return atomicfile.CreateLinked(d.fs, name, data, perm, false)
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
// yet complete (see ca.CA.Check).
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

// SyncDir fsyncs the directory name, making renames and creations in it
// durable.
func (d *Dir) SyncDir(name string) error { return atomicfile.SyncDir(d.fs, name) }

// RemoveTemps deletes WriteAtomic's leftover temporary files in the
// directory dir of d.
func (d *Dir) RemoveTemps(dir string) error {
	entries, err := fs.ReadDir(d.root.FS(), dir)
	if err != nil {
		return fmt.Errorf("listing %q: %w", d.Join(dir), err)
	}
	for _, e := range entries {
		if IsTemp(e.Name()) {
			if err := d.root.Remove(path.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("removing %q: %w", d.Join(path.Join(dir, e.Name())), err)
			}
		}
	}
	return nil
}

// IsTemp reports whether a base name is one of WriteAtomic's temporary files.
func IsTemp(base string) bool { return atomicfile.IsTemp(base) }

// ReadAppend appends what is left of r to buf, reusing its capacity.
func ReadAppend(r io.Reader, buf []byte) ([]byte, error) {
	for {
		buf = growBuf(buf)
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// growBuf makes room in buf for more bytes.
func growBuf(buf []byte) []byte {
	if len(buf) == cap(buf) {
		buf = append(buf, 0)[:len(buf)]
	}
	return buf
}
