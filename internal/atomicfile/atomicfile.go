package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TempPrefix starts the base name of every temporary file.
const TempPrefix = ".tmp-"

// IsTemp reports whether base, a file's base name, is one of this package's
// temporary files.
func IsTemp(base string) bool { return strings.HasPrefix(base, TempPrefix) }

// FS is a file tree that files are written in. Path gives the path of a
// name for error messages.
type FS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error)
	Open(name string) (*os.File, error)
	Rename(oldname, newname string) error
	Link(oldname, newname string) error
	Remove(name string) error
	Lstat(name string) (fs.FileInfo, error)
	Path(name string) string
}

// OS is the operating system's file tree: names are ordinary paths.
var OS FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
func (osFS) Open(name string) (*os.File, error)     { return os.Open(name) }
func (osFS) Rename(oldname, newname string) error   { return os.Rename(oldname, newname) }
func (osFS) Link(oldname, newname string) error     { return os.Link(oldname, newname) }
func (osFS) Remove(name string) error               { return os.Remove(name) }
func (osFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }
func (osFS) Path(name string) string                { return name }

// Root returns the file tree of r, whose names cannot escape it. dir is
// r's path, for error messages.
func Root(r *os.Root, dir string) FS { return rootFS{r, dir} }

type rootFS struct {
	*os.Root
	dir string
}

func (r rootFS) Path(name string) string { return r.dir + string(os.PathSeparator) + name }

// WriteFile replaces the file at path with data, as Replace does on OS.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Replace(OS, path, perm, Bytes(data))
}

// Bytes returns a write function for Replace that writes data.
func Bytes(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

// Replace replaces name with what write writes, durably: a temporary file
// beside name is created with perm and O_EXCL, written, fsynced, renamed
// over name, and the directory fsynced. On failure name is unchanged and
// the temporary file removed (but for a failed directory fsync, after
// which name holds the new content, not yet durably).
func Replace(fsys FS, name string, perm fs.FileMode, write func(io.Writer) error) error {
	f, tmp, err := WriteTemp(fsys, name, perm, write, true)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		fsys.Remove(tmp)
		return fmt.Errorf("writing %q: %w", fsys.Path(tmp), err)
	}
	if err := fsys.Rename(tmp, name); err != nil {
		fsys.Remove(tmp)
		return fmt.Errorf("renaming %q: %w", fsys.Path(name), err)
	}
	return SyncDir(fsys, filepath.Dir(name))
}

// CreateNew creates name with perm and O_EXCL, writes it with write and
// fsyncs it and its directory. It fails with an error matching fs.ErrExist
// when name exists, leaving that file alone; after any other failure it
// removes name. A crash may leave name partly written.
func CreateNew(fsys FS, name string, perm fs.FileMode, write func(io.Writer) error) error {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("creating %q: %w", fsys.Path(name), err)
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fsys.Remove(name)
		return fmt.Errorf("writing %q: %w", fsys.Path(name), err)
	}
	return SyncDir(fsys, filepath.Dir(name))
}

// CreateLinked creates name with data and perm and returns it open for
// writing at its end. The data goes to a temporary file first, fsynced
// when sync is set, which is then linked to name: name never holds a
// partial file, and the link fails with an error matching fs.ErrExist when
// name exists. The caller closes the file, and fsyncs the directory (see
// SyncDir) when the new name must be durable.
func CreateLinked(fsys FS, name string, data []byte, perm fs.FileMode, sync bool) (*os.File, error) {
	f, tmp, err := WriteTemp(fsys, name, perm, Bytes(data), sync)
	if err != nil {
		return nil, err
	}
	// Link fails if name exists, unlike Rename, which would replace it.
	err = fsys.Link(tmp, name)
	if err != nil {
		err = fmt.Errorf("creating %q: %w", fsys.Path(name), err)
	}
	if rerr := fsys.Remove(tmp); err == nil && rerr != nil {
		err = fmt.Errorf("removing %q: %w", fsys.Path(tmp), rerr)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// WriteTemp writes a new temporary file beside name (mode perm, O_EXCL,
// a random name starting with TempPrefix) with write, fsynced when sync is
// set, and returns it open, with its name. On failure it removes the file.
func WriteTemp(fsys FS, name string, perm fs.FileMode, write func(io.Writer) error, sync bool) (*os.File, string, error) {
	var b [8]byte
	rand.Read(b[:])
	tmp := filepath.Join(filepath.Dir(name), TempPrefix+filepath.Base(name)+"-"+hex.EncodeToString(b[:]))
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return nil, "", fmt.Errorf("creating %q: %w", fsys.Path(tmp), err)
	}
	werr := write(f)
	if werr == nil && sync {
		werr = f.Sync()
	}
	if werr != nil {
		f.Close()
		fsys.Remove(tmp)
		return nil, "", fmt.Errorf("writing %q: %w", fsys.Path(tmp), werr)
	}
	return f, tmp, nil
}

// SyncDir fsyncs the directory name, making renames and creations in it
// durable. A file system that cannot fsync directories is not an error.
func SyncDir(fsys FS, name string) error {
	f, err := fsys.Open(name)
	if err != nil {
		return fmt.Errorf("opening directory %q: %w", fsys.Path(name), err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("syncing directory %q: %w", fsys.Path(name), err)
	}
	return nil
}
