//go:build unix

package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// ReadFile reads a regular file, and refuses at once, naming the path and
// the type, a FIFO (which open(2) would wait on for a writer), a device
// and a directory.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "crl.der")
	if err := os.WriteFile(regular, []byte("\x30\x03\x02\x01\x01"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(regular); err != nil || string(got) != "\x30\x03\x02\x01\x01" {
		t.Fatalf("ReadFile(regular) = %q, %v", got, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, path, want string }{
		{"FIFO", fifo, "open " + fifo + ": not a regular file (a FIFO)"},
		{"device", "/dev/null", "open /dev/null: not a regular file (a character device)"},
		{"directory", dir, "open " + dir + ": not a regular file (a directory)"},
	} {
		_, err := ReadFile(tt.path)
		var pe *fs.PathError
		if !errors.Is(err, ErrNotRegular) || !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadFile(%s) error = %v; want ErrNotRegular, %q", tt.name, err, tt.want)
		}
	}
}
