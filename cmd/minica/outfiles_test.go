package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteOutFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		existing map[string]string // file -> content before the write
		stale    bool              // a crashed writer's temporary file lies beside out.crt
		force    bool
		wantErr  string // "" is success
		want     map[string]string
	}{
		{name: "new files", want: map[string]string{"out.key": "key", "out.crt": "cert"}},
		{name: "existing, no force", existing: map[string]string{"out.crt": "old"},
			wantErr: "out.crt already exists", want: map[string]string{"out.crt": "old"}},
		{name: "existing, force", existing: map[string]string{"out.crt": "old"}, force: true,
			want: map[string]string{"out.key": "key", "out.crt": "cert"}},
		{name: "stale temporary file, force", existing: map[string]string{"out.crt": "old"}, stale: true, force: true,
			want: map[string]string{"out.key": "key", "out.crt": "cert"}},
		{name: "second file fails, first removed", existing: map[string]string{"out.crt/x": ""}, force: true,
			wantErr: "out.crt", want: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tt.existing {
				p := filepath.Join(dir, name)
				os.MkdirAll(filepath.Dir(p), 0o700)
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tt.stale {
				// The name earlier versions gave their temporary file.
				stale := filepath.Join(dir, fmt.Sprintf(".out.crt.%d.tmp", os.Getpid()))
				if err := os.WriteFile(stale, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				defer os.Remove(stale)
			}
			files := []outFile{
				{filepath.Join(dir, "out.key"), []byte("key"), 0o600},
				{filepath.Join(dir, "out.crt"), []byte("cert"), 0o644},
			}
			err := writeOutFiles(files, tt.force)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("writeOutFiles() error = %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("writeOutFiles() error = %v; want containing %q", err, tt.wantErr)
			}
			for name, want := range tt.want {
				got, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil || string(got) != want {
					t.Errorf("%s = %q, %v; want %q", name, got, err, want)
				}
			}
			if _, ok := tt.want["out.key"]; !ok {
				if _, err := os.Lstat(filepath.Join(dir, "out.key")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("out.key exists after a failed write")
				}
			}
			if info, err := os.Stat(filepath.Join(dir, "out.key")); err == nil && info.Mode().Perm() != 0o600 {
				t.Errorf("out.key has mode %04o; want 0600", info.Mode().Perm())
			}
			des, _ := os.ReadDir(dir)
			for _, de := range des {
				if strings.HasPrefix(de.Name(), ".") && !(tt.stale && strings.HasSuffix(de.Name(), ".tmp")) {
					t.Errorf("temporary file %s left behind", de.Name())
				}
			}
		})
	}
}

// A CRL copy replaces the old one whole, with mode 0644, and leaves no
// temporary file, also when the write fails.
func TestWriteCRLCopy(t *testing.T) {
	dir := t.TempDir()
	pemFile, derFile := filepath.Join(dir, "ca.crl.pem"), filepath.Join(dir, "ca.crl")
	for _, f := range []string{pemFile, derFile} {
		if err := os.WriteFile(f, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		cp, err := writeCopy(f, []byte{0x30, 0x00})
		if err != nil {
			t.Fatalf("writeCopy(%q) error = %v", f, err)
		}
		// The sum reported is sha256sum's for the file as it lies on disk.
		written, _ := os.ReadFile(f)
		if sum := sha256.Sum256(written); cp.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("writeCopy(%q) reports sha256 %q; want %x, the file's", f, cp.SHA256, sum)
		}
		info, err := os.Stat(f)
		if err != nil || info.Mode().Perm() != 0o644 {
			t.Errorf("%s: %v, mode %v; want 0644", f, err, info.Mode())
		}
	}
	if got, _ := os.ReadFile(pemFile); !strings.HasPrefix(string(got), "-----BEGIN X509 CRL-----") {
		t.Errorf("%s holds %q; want a PEM CRL", pemFile, got)
	}
	if got, _ := os.ReadFile(derFile); string(got) != "\x30\x00" {
		t.Errorf("%s holds %q; want the DER", derFile, got)
	}
	_, err := writeCopy(filepath.Join(dir, "missing", "ca.crl"), []byte{0x30, 0x00})
	want := fmt.Sprintf("writing CRL copy %q: ", filepath.Join(dir, "missing", "ca.crl"))
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("writeCopy() into a missing directory: error = %v; want starting with %q", err, want)
	}
	if des, _ := os.ReadDir(dir); len(des) != 2 {
		t.Errorf("directory holds %d entries; want the 2 CRL copies", len(des))
	}
}
