package cadir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCreateNewSynced(t *testing.T) {
	root := t.TempDir()
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = d.CreateNewSynced(
		NewFile{Name: "a.key", Data: []byte("secret"), Perm: 0o600},
		NewFile{Name: "a.crt", Data: []byte("public"), Perm: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]struct {
		data string
		mode os.FileMode
	}{"a.key": {"secret", 0o600}, "a.crt": {"public", 0o644}} {
		fi, err := os.Stat(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(filepath.Join(root, name))
		if string(data) != want.data || fi.Mode().Perm() != want.mode {
			t.Errorf("%s: %q mode %v; want %q mode %v", name, data, fi.Mode().Perm(), want.data, want.mode)
		}
	}
}

// A file that exists stops CreateNewSynced: it is left as it was, and the
// files created before it are removed again.
func TestCreateNewSyncedExisting(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "b.crt"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = d.CreateNewSynced(
		NewFile{Name: "b.chain.pem", Data: []byte("chain"), Perm: 0o644},
		NewFile{Name: "b.crt", Data: []byte("new"), Perm: 0o644})
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("CreateNewSynced over an existing file: %v; want an error matching fs.ErrExist", err)
	}
	if _, err := os.Stat(filepath.Join(root, "b.chain.pem")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("b.chain.pem after the failure: %v; want it removed", err)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "b.crt")); string(data) != "old" {
		t.Errorf("existing b.crt = %q; want it untouched (\"old\")", data)
	}
}

func TestMkdirSub(t *testing.T) {
	root := t.TempDir()
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i, wantCreated := range []bool{true, false} {
		sub, created, err := d.MkdirSub("a")
		if err != nil || created != wantCreated {
			t.Fatalf("MkdirSub(a) call %d: created %v, %v; want %v, nil", i+1, created, err, wantCreated)
		}
		sub.Close()
	}
	if err := os.WriteFile(filepath.Join(root, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.MkdirSub("f"); err == nil || !strings.Contains(err.Error(), `opening "`+d.Join("f")+`"`) {
		t.Errorf("MkdirSub over a file = %v; want an error opening it", err)
	}
}

// Replaced tells a directory held open from the one now at its path: the
// same directory, its files changed, is not replaced; one renamed away
// with another put in its place (a restore over the same path), or one
// removed, is.
func TestDirReplaced(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, p string)
		want   bool
	}{
		{name: "files changed", change: func(t *testing.T, p string) {
			if err := os.WriteFile(filepath.Join(p, "f"), []byte("new"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "restored over its path", want: true, change: func(t *testing.T, p string) {
			if err := os.Rename(p, p+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "removed and created again", want: true, change: func(t *testing.T, p string) {
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "removed", want: true, change: func(t *testing.T, p string) {
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "ca")
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			d, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if d.Replaced() {
				t.Fatal("Replaced() = true before any change; want false")
			}
			tt.change(t, p)
			if got := d.Replaced(); got != tt.want {
				t.Errorf("Replaced() = %v; want %v", got, tt.want)
			}
		})
	}
}
