package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"minica/internal/atomicfile"
)

// staged is where CreateGroup stages name (see its doc comment).
func staged(dir, base string) string {
	return filepath.Join(dir, atomicfile.TempPrefix+base+".group")
}

func writeFile(t *testing.T, path, data string, perm fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), perm); err != nil {
		t.Fatal(err)
	}
}

func TestCreateGroup(t *testing.T) {
	for _, tr := range trees(t) {
		t.Run(tr.name, func(t *testing.T) {
			files := []atomicfile.File{
				{Name: tr.base + "pw", Data: []byte("secret\n"), Perm: 0o600},
				{Name: tr.base + "bundle", Data: []byte("p12"), Perm: 0o644},
			}
			if err := atomicfile.CreateGroup(tr.fsys, files, false); err != nil {
				t.Fatalf("CreateGroup() error = %v", err)
			}
			checkFile(t, filepath.Join(tr.dir, "pw"), "secret\n", 0o600)
			checkFile(t, filepath.Join(tr.dir, "bundle"), "p12", 0o644)
			if got := entries(t, tr.dir); !slices.Equal(got, []string{"bundle", "pw"}) {
				t.Errorf("directory holds %q; want bundle and pw only", got)
			}

			// Without replace an existing file stops the group: nothing
			// is written, nothing is left.
			writeFile(t, filepath.Join(tr.dir, "taken"), "mine", 0o644)
			err := atomicfile.CreateGroup(tr.fsys, []atomicfile.File{
				{Name: tr.base + "new", Data: []byte("a"), Perm: 0o644},
				{Name: tr.base + "taken", Data: []byte("b"), Perm: 0o644},
			}, false)
			if !errors.Is(err, fs.ErrExist) {
				t.Fatalf("CreateGroup() over an existing file: error = %v; want fs.ErrExist", err)
			}
			checkFile(t, filepath.Join(tr.dir, "taken"), "mine", 0o644)
			if got := entries(t, tr.dir); !slices.Equal(got, []string{"bundle", "pw", "taken"}) {
				t.Errorf("directory holds %q after the refusal; want bundle, pw and taken", got)
			}

			// With replace the files are replaced, with the new modes.
			files[0].Data, files[1].Data, files[1].Perm = []byte("other\n"), []byte("p12 again"), 0o600
			if err := atomicfile.CreateGroup(tr.fsys, files, true); err != nil {
				t.Fatalf("CreateGroup(replace) error = %v", err)
			}
			checkFile(t, filepath.Join(tr.dir, "pw"), "other\n", 0o600)
			checkFile(t, filepath.Join(tr.dir, "bundle"), "p12 again", 0o600)
			if got := entries(t, tr.dir); !slices.Equal(got, []string{"bundle", "pw", "taken"}) {
				t.Errorf("directory holds %q; want bundle, pw and taken", got)
			}
		})
	}
}

// SettleGroup finishes what a killed CreateGroup left, whatever the step:
// with no file in its place, the staged ones go (a file of that name
// that someone else wrote stays); with one in place, the others follow.
func TestSettleGroup(t *testing.T) {
	tests := []struct {
		name string
		// setup makes the state in dir that a kill leaves.
		setup     func(t *testing.T, dir string)
		want      atomicfile.Settled
		wantFiles map[string]string
	}{
		{"nothing interrupted", func(t *testing.T, dir string) {}, atomicfile.SettledNothing, map[string]string{}},
		{"killed while staging", func(t *testing.T, dir string) {
			writeFile(t, staged(dir, "pw"), "secret\n", 0o600)
			writeFile(t, staged(dir, "bundle"), "p1", 0o600) // cut short
		}, atomicfile.SettledRemoved, map[string]string{}},
		{"killed before the first name, beside another's file", func(t *testing.T, dir string) {
			writeFile(t, staged(dir, "pw"), "secret\n", 0o600)
			writeFile(t, staged(dir, "bundle"), "p12", 0o600)
			writeFile(t, filepath.Join(dir, "pw"), "someone else's", 0o600)
		}, atomicfile.SettledRemoved, map[string]string{"pw": "someone else's"}},
		{"killed after the first name", func(t *testing.T, dir string) {
			writeFile(t, staged(dir, "pw"), "secret\n", 0o600)
			writeFile(t, staged(dir, "bundle"), "p12", 0o600)
			if err := os.Link(staged(dir, "pw"), filepath.Join(dir, "pw")); err != nil {
				t.Fatal(err)
			}
		}, atomicfile.SettledCompleted, map[string]string{"pw": "secret\n", "bundle": "p12"}},
		{"killed replacing, after the first name", func(t *testing.T, dir string) {
			writeFile(t, staged(dir, "pw"), "secret\n", 0o600)
			writeFile(t, staged(dir, "bundle"), "p12", 0o600)
			if err := os.Link(staged(dir, "pw"), filepath.Join(dir, "pw")); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "bundle"), "old p12", 0o600)
		}, atomicfile.SettledCompleted, map[string]string{"pw": "secret\n", "bundle": "p12"}},
		{"killed removing the staged names", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "pw"), "secret\n", 0o600)
			writeFile(t, staged(dir, "bundle"), "p12", 0o600)
			if err := os.Link(staged(dir, "bundle"), filepath.Join(dir, "bundle")); err != nil {
				t.Fatal(err)
			}
		}, atomicfile.SettledCompleted, map[string]string{"pw": "secret\n", "bundle": "p12"}},
	}
	for _, tt := range tests {
		for _, tr := range trees(t) {
			t.Run(tt.name+"/"+tr.name, func(t *testing.T) {
				tt.setup(t, tr.dir)
				got, err := atomicfile.SettleGroup(tr.fsys, []string{tr.base + "pw", tr.base + "bundle"})
				if err != nil || got != tt.want {
					t.Fatalf("SettleGroup() = %v, %v; want %v", got, err, tt.want)
				}
				var names []string
				for name, data := range tt.wantFiles {
					checkFile(t, filepath.Join(tr.dir, name), data, 0o600)
					names = append(names, name)
				}
				slices.Sort(names)
				if got := entries(t, tr.dir); !slices.Equal(got, names) {
					t.Errorf("directory holds %q; want %q", got, names)
				}
			})
		}
	}
}

// noLinkFS is a file system without hard links, as FAT on a USB stick.
type noLinkFS struct{ atomicfile.FS }

func (noLinkFS) Link(oldname, newname string) error {
	return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: syscall.EPERM}
}

// Without hard links the files are renamed into place: the group is still
// written whole, and an existing file is still not overwritten.
func TestCreateGroupWithoutHardLinks(t *testing.T) {
	dir := t.TempDir()
	fsys := noLinkFS{atomicfile.OS}
	files := []atomicfile.File{
		{Name: filepath.Join(dir, "pw"), Data: []byte("secret\n"), Perm: 0o600},
		{Name: filepath.Join(dir, "bundle"), Data: []byte("p12"), Perm: 0o600},
	}
	if err := atomicfile.CreateGroup(fsys, files, false); err != nil {
		t.Fatalf("CreateGroup() error = %v", err)
	}
	checkFile(t, filepath.Join(dir, "pw"), "secret\n", 0o600)
	checkFile(t, filepath.Join(dir, "bundle"), "p12", 0o600)
	if err := atomicfile.CreateGroup(fsys, files[1:], false); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateGroup() over an existing file: error = %v; want fs.ErrExist", err)
	}
	files[0].Data, files[1].Data = []byte("other\n"), []byte("p12 again")
	if err := atomicfile.CreateGroup(fsys, files, true); err != nil {
		t.Fatalf("CreateGroup(replace) error = %v", err)
	}
	checkFile(t, filepath.Join(dir, "pw"), "other\n", 0o600)
	checkFile(t, filepath.Join(dir, "bundle"), "p12 again", 0o600)
	if got := entries(t, dir); !slices.Equal(got, []string{"bundle", "pw"}) {
		t.Errorf("directory holds %q; want bundle and pw only", got)
	}
}
