package crlsource

import (
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// One file is given as it is; several become one PEM text, a DER file as
// a PEM block, each ending in a newline; a file that cannot be read is a
// *FileError that names it once.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	der := []byte{0x30, 0x03, 0x02, 0x01, 0x07}
	pemCRL := pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: []byte{0x30, 0x00}})
	write := func(name string, data []byte) string {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	derFile, pemFile := write("one.der", der), write("two.pem", pemCRL[:len(pemCRL)-1])
	if got, err := (Files{derFile}).Current(); err != nil || string(got) != string(der) {
		t.Errorf("Files{der}.Current() = %q, %v; want the file as it is", got, err)
	}
	want := string(pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der})) + string(pemCRL)
	if got, err := (Files{derFile, pemFile}).Current(); err != nil || string(got) != want {
		t.Errorf("Files{der, pem}.Current() = %q, %v; want %q", got, err, want)
	}
	missing := filepath.Join(dir, "none.der")
	_, err := (Files{derFile, missing}).Current()
	var fe *FileError
	if !errors.As(err, &fe) || fe.File != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Current() with a missing file: error = %v; want a *FileError of it", err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("error = %v; want the *fs.PathError of reading it", err)
	}
	if want := `reading CRL "` + missing + `": ` + pe.Err.Error(); err.Error() != want {
		t.Errorf("error = %q; want %q", err, want)
	}
}
