package atomicfile_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"minica/internal/atomicfile"
)

// trees returns a fresh directory reached both ways: as plain paths on OS,
// and through an os.Root. base joins a name for the OS case.
func trees(t *testing.T) []struct {
	name string
	fsys atomicfile.FS
	dir  string
	base string
} {
	osDir, rootDir := t.TempDir(), t.TempDir()
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return []struct {
		name string
		fsys atomicfile.FS
		dir  string
		base string
	}{
		{"os", atomicfile.OS, osDir, osDir + string(os.PathSeparator)},
		{"root", atomicfile.Root(root, rootDir), rootDir, ""},
	}
}

var errDiskFull = errors.New("disk full")

func failingWrite(w io.Writer) error {
	w.Write([]byte("part"))
	return errDiskFull
}

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func checkFile(t *testing.T, path, want string, wantMode fs.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s holds %q; want %q", path, got, want)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != wantMode {
		t.Errorf("%s has mode %04o; want %04o", path, info.Mode().Perm(), wantMode)
	}
}

func TestReplace(t *testing.T) {
	for _, tr := range trees(t) {
		t.Run(tr.name, func(t *testing.T) {
			target := filepath.Join(tr.dir, "state")
			if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			// The new file's mode is perm, not the old file's.
			if err := atomicfile.Replace(tr.fsys, tr.base+"state", 0o600, atomicfile.Bytes([]byte("new"))); err != nil {
				t.Fatalf("Replace() error = %v", err)
			}
			checkFile(t, target, "new", 0o600)
			if got := entries(t, tr.dir); len(got) != 1 {
				t.Errorf("directory holds %q; want only state", got)
			}
		})
	}
}

func TestReplaceFailureKeepsOldFile(t *testing.T) {
	for _, tr := range trees(t) {
		t.Run(tr.name, func(t *testing.T) {
			target := filepath.Join(tr.dir, "state")
			if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := atomicfile.Replace(tr.fsys, tr.base+"state", 0o644, failingWrite)
			want := `writing "` + filepath.Join(tr.dir, atomicfile.TempPrefix+"state-")
			if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, errDiskFull) {
				t.Fatalf("Replace() error = %v; want starting with %q and wrapping %v", err, want, errDiskFull)
			}
			checkFile(t, target, "old", 0o644)
			if got := entries(t, tr.dir); len(got) != 1 {
				t.Errorf("directory holds %q after a failed write; want only state", got)
			}
		})
	}
}

func TestReplaceRenameFailure(t *testing.T) {
	for _, tr := range trees(t) {
		t.Run(tr.name, func(t *testing.T) {
			// A non-empty directory cannot be renamed over.
			if err := os.MkdirAll(filepath.Join(tr.dir, "state", "inner"), 0o700); err != nil {
				t.Fatal(err)
			}
			err := atomicfile.Replace(tr.fsys, tr.base+"state", 0o644, atomicfile.Bytes([]byte("new")))
			want := `renaming "` + filepath.Join(tr.dir, "state") + `": `
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("Replace() error = %v; want starting with %q", err, want)
			}
			if got := entries(t, tr.dir); len(got) != 1 {
				t.Errorf("directory holds %q after a failed rename; want only state", got)
			}
		})
	}
}

// A temporary file left by a crash does not stand in the way of the next
// write, whatever process wrote it.
func TestReplaceIgnoresLeftovers(t *testing.T) {
	for _, tr := range trees(t) {
		t.Run(tr.name, func(t *testing.T) {
			for _, name := range []string{atomicfile.TempPrefix + "state-0000000000000000", ".state.1.tmp"} {
				if err := os.WriteFile(filepath.Join(tr.dir, name), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := atomicfile.Replace(tr.fsys, tr.base+"state", 0o644, atomicfile.Bytes([]byte("new"))); err != nil {
				t.Fatalf("Replace() error = %v", err)
			}
			checkFile(t, filepath.Join(tr.dir, "state"), "new", 0o644)
		})
	}
}

func TestCreateNew(t *testing.T) {
	for _, tr := range trees(t) {
		t.Run(tr.name, func(t *testing.T) {
			if err := atomicfile.CreateNew(tr.fsys, tr.base+"key", 0o600, atomicfile.Bytes([]byte("secret"))); err != nil {
				t.Fatalf("CreateNew() error = %v", err)
			}
			checkFile(t, filepath.Join(tr.dir, "key"), "secret", 0o600)

			err := atomicfile.CreateNew(tr.fsys, tr.base+"key", 0o600, atomicfile.Bytes([]byte("other")))
			want := `creating "` + filepath.Join(tr.dir, "key") + `": `
			if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, fs.ErrExist) {
				t.Fatalf("CreateNew() over an existing file: error = %v; want starting with %q and matching fs.ErrExist", err, want)
			}
			checkFile(t, filepath.Join(tr.dir, "key"), "secret", 0o600)

			err = atomicfile.CreateNew(tr.fsys, tr.base+"new", 0o600, failingWrite)
			want = `writing "` + filepath.Join(tr.dir, "new") + `": disk full`
			if err == nil || err.Error() != want {
				t.Fatalf("CreateNew() with a failing write: error = %v; want %q", err, want)
			}
			if _, err := os.Lstat(filepath.Join(tr.dir, "new")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a failed CreateNew left its file: %v", err)
			}
		})
	}
}

func TestCreateLinked(t *testing.T) {
	for _, tr := range trees(t) {
		t.Run(tr.name, func(t *testing.T) {
			f, err := atomicfile.CreateLinked(tr.fsys, tr.base+"log", []byte("head\n"), 0o644, true)
			if err != nil {
				t.Fatalf("CreateLinked() error = %v", err)
			}
			if _, err := f.Write([]byte("more\n")); err != nil {
				t.Fatal(err)
			}
			f.Close()
			checkFile(t, filepath.Join(tr.dir, "log"), "head\nmore\n", 0o644)

			_, err = atomicfile.CreateLinked(tr.fsys, tr.base+"log", []byte("other"), 0o644, true)
			if !errors.Is(err, fs.ErrExist) {
				t.Fatalf("CreateLinked() over an existing file: error = %v; want matching fs.ErrExist", err)
			}
			checkFile(t, filepath.Join(tr.dir, "log"), "head\nmore\n", 0o644)
			if got := entries(t, tr.dir); len(got) != 1 {
				t.Errorf("directory holds %q; want only log", got)
			}
		})
	}
}

// Through Root no name leaves the directory.
func TestRootRefusesEscape(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "ca")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	fsys := atomicfile.Root(root, dir)
	for _, name := range []string{"../outside", "/etc/outside"} {
		if err := atomicfile.Replace(fsys, name, 0o644, atomicfile.Bytes(nil)); err == nil {
			t.Errorf("Replace(%q) succeeded; want an error", name)
		}
		if err := atomicfile.CreateNew(fsys, name, 0o644, atomicfile.Bytes(nil)); err == nil {
			t.Errorf("CreateNew(%q) succeeded; want an error", name)
		}
	}
	if got := entries(t, parent); len(got) != 1 {
		t.Errorf("parent holds %q; want only ca", got)
	}
}

func TestIsTemp(t *testing.T) {
	tests := []struct {
		base string
		want bool
	}{
		{atomicfile.TempPrefix + "state-0123456789abcdef", true},
		{"state", false},
		{".state.tmp", false},
	}
	for _, tt := range tests {
		if got := atomicfile.IsTemp(tt.base); got != tt.want {
			t.Errorf("IsTemp(%q) = %v; want %v", tt.base, got, tt.want)
		}
	}
}
