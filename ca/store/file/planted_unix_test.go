//go:build unix

package file

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"minica/ca/store"
	"minica/internal/regfile"
)

// TestNonceTableNotRegular: a FIFO planted as the table is refused,
// naming it, without waiting for a writer.
func TestNonceTableNotRegular(t *testing.T) {
	s, p := newNonceStore(t)
	if err := os.MkdirAll(filepath.Join(p, ACMEDir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(p, NonceTable), 0o600); err != nil {
		t.Fatal(err)
	}
	err := s.AddNonce("Zm9vYmFyYmF6cXV4MTIzNA", nonceT0)
	if err == nil || !strings.Contains(err.Error(), NonceTable) || !strings.Contains(err.Error(), regfile.ErrNotRegular.Error()) {
		t.Errorf("AddNonce with a FIFO as the table: %v; want an error naming %s as not a regular file", err, NonceTable)
	}
	if ok, err := s.UseNonce("Zm9vYmFyYmF6cXV4MTIzNA", nonceT0); ok || err == nil {
		t.Errorf("UseNonce with a FIFO as the table = %v, %v; want false and an error", ok, err)
	}
}

// TestObjectFileNotRegular: a FIFO planted as an object's file is refused
// by a Volatile put, naming it, without waiting for a reader.
func TestObjectFileNotRegular(t *testing.T) {
	s, p := newNonceStore(t)
	name := objectPath(p, "orders", "o3")
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(name, 0o600); err != nil {
		t.Fatal(err)
	}
	err := s.PutObject(store.Object{Kind: "orders", ID: "o3", Data: []byte("{}"), Volatile: true})
	if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), regfile.ErrNotRegular.Error()) {
		t.Errorf("a Volatile put over a FIFO: %v; want an error naming %s as not a regular file", err, name)
	}
}
