package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// File is one file of a group that CreateGroup writes.
type File struct {
	Name string
	Data []byte
	Perm fs.FileMode
}

// Settled says what SettleGroup found of an earlier CreateGroup.
type Settled int

const (
	// SettledNothing: no earlier call was interrupted.
	SettledNothing Settled = iota
	// SettledRemoved: an earlier call was interrupted before any file
	// took its name; what it staged was removed, so none of its files
	// exists.
	SettledRemoved
	// SettledCompleted: an earlier call was interrupted while its files
	// took their names; the rest took theirs, so all of them exist.
	SettledCompleted
)

// stagedName is where CreateGroup stages the content of name: a fixed
// name beside it, so that a later call for the same names finds what an
// interrupted one left. swapName is the second link that a replacing
// commit renames over name.
func stagedName(name string) string {
	return filepath.Join(filepath.Dir(name), TempPrefix+filepath.Base(name)+".group")
}

func swapName(name string) string { return stagedName(name) + "-swap" }

// CreateGroup writes files so that all of them exist or none does, also
// after a crash at any point, provided the next call for the same names
// settles what the crash left (it does so first, see SettleGroup).
//
// Each file is first written and fsynced under a staged name beside its
// own (TempPrefix, the base name, ".group"), with O_EXCL and its mode.
// Then each takes its name in order: a hard link, which fails with an
// error matching fs.ErrExist when the name exists, or with replace a
// rename over it. The last file takes its name last, and with replace its
// old file is removed before the first takes its name, so that whenever
// the last file exists every other file of its group does: put the file
// that is useless without the others (a bundle without its password)
// last. Once a file has taken its name, the group is complete whatever
// happens: a crash then leaves files that SettleGroup puts in
// place. A failure (an error returned, not a crash) removes what was
// written, and with replace the files it replaced are gone. The staged
// names go once every file has its own.
func CreateGroup(fsys FS, files []File, replace bool) error {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Name
	}
	if _, err := SettleGroup(fsys, names); err != nil {
		return err
	}
	staged := make([]string, 0, len(files))
	unstage := func() {
		for _, s := range staged {
			fsys.Remove(s)
		}
	}
	for _, f := range files {
		s := stagedName(f.Name)
		if err := CreateNew(fsys, s, f.Perm, Bytes(f.Data)); err != nil {
			unstage()
			// Name the file asked for; the staged name means nothing
			// to whoever asked.
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return fmt.Errorf("creating %q: %w", fsys.Path(f.Name), err)
		}
		staged = append(staged, s)
	}
	if replace && len(files) > 0 {
		// The last file must never stand beside files of another group:
		// its old version goes before any file takes its name.
		last := files[len(files)-1].Name
		if err := fsys.Remove(last); err != nil && !errors.Is(err, fs.ErrNotExist) {
			unstage()
			return fmt.Errorf("removing %q: %w", fsys.Path(last), err)
		}
		if err := SyncDir(fsys, filepath.Dir(last)); err != nil {
			unstage()
			return err
		}
	}
	for i, f := range files {
		if err := takeName(fsys, staged[i], f.Name, replace); err != nil {
			untake(fsys, names[:i])
			unstage()
			return err
		}
	}
	return finishGroup(fsys, names)
}

// untake removes the names that files of an unfinished group took, when
// they still are those files.
func untake(fsys FS, names []string) {
	for _, n := range names {
		s, err := fsys.Lstat(stagedName(n))
		if t, terr := fsys.Lstat(n); err == nil && terr == nil && os.SameFile(s, t) {
			fsys.Remove(n)
		}
	}
}

// takeName gives staged's file the name name: a hard link, or with
// replace a second link renamed over name. Where the file system has no
// hard links (FAT on a USB stick) staged itself is renamed; a kill then
// leaves nothing that tells its file took its name, and the next run
// removes the rest of the group instead of completing it.
func takeName(fsys FS, staged, name string, replace bool) error {
	if !replace {
		err := fsys.Link(staged, name)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			err = renameNew(fsys, staged, name)
		}
		if err != nil {
			return fmt.Errorf("creating %q: %w", fsys.Path(name), err)
		}
		return nil
	}
	swap := swapName(name)
	fsys.Remove(swap)
	if err := fsys.Link(staged, swap); err != nil {
		swap = staged // no hard links: rename the staged file itself
	}
	if err := fsys.Rename(swap, name); err != nil {
		if swap != staged {
			fsys.Remove(swap)
		}
		return fmt.Errorf("renaming %q: %w", fsys.Path(name), err)
	}
	return nil
}

// renameNew renames staged to name, which must not exist: what stands in
// for a hard link where the file system has none.
func renameNew(fsys FS, staged, name string) error {
	if _, err := fsys.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
		return fs.ErrExist
	}
	return fsys.Rename(staged, name)
}

// finishGroup makes the names of a complete group durable and removes its
// staged names.
func finishGroup(fsys FS, names []string) error {
	if err := syncDirs(fsys, names); err != nil {
		return err
	}
	for _, n := range names {
		for _, s := range []string{stagedName(n), swapName(n)} {
			if err := fsys.Remove(s); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("removing %q: %w", fsys.Path(s), err)
			}
		}
	}
	return syncDirs(fsys, names)
}

// SettleGroup finishes what an interrupted CreateGroup of the same names
// left: when one of its files had taken its name, every file was staged
// whole, so the others take theirs (replacing what is there) and all
// exist; otherwise the staged files are removed and none exists. A name
// counts as taken when it is the same file as its staged name, so a file
// of the same name that someone else wrote is never removed.
func SettleGroup(fsys FS, names []string) (Settled, error) {
	var staged []int
	taken := false
	for i, n := range names {
		s, err := fsys.Lstat(stagedName(n))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return SettledNothing, fmt.Errorf("reading %q: %w", fsys.Path(stagedName(n)), err)
		}
		staged = append(staged, i)
		if t, err := fsys.Lstat(n); err == nil && os.SameFile(s, t) {
			taken = true
		}
	}
	if len(staged) == 0 {
		return SettledNothing, nil
	}
	if !taken {
		for _, i := range staged {
			for _, s := range []string{stagedName(names[i]), swapName(names[i])} {
				if err := fsys.Remove(s); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return SettledNothing, fmt.Errorf("removing %q: %w", fsys.Path(s), err)
				}
			}
		}
		return SettledRemoved, syncDirs(fsys, names)
	}
	for _, i := range staged {
		n := names[i]
		s, _ := fsys.Lstat(stagedName(n))
		if t, err := fsys.Lstat(n); err == nil && os.SameFile(s, t) {
			continue
		}
		if err := takeName(fsys, stagedName(n), n, true); err != nil {
			return SettledNothing, err
		}
	}
	return SettledCompleted, finishGroup(fsys, names)
}

// syncDirs fsyncs the directory of every name once.
func syncDirs(fsys FS, names []string) error {
	var dirs []string
	for _, n := range names {
		if d := filepath.Dir(n); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		if err := SyncDir(fsys, d); err != nil {
			return err
		}
	}
	return nil
}
