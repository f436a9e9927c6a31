package file

import (
	"bytes"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"minica/ca/store"
	"minica/internal/atomicfile"
)

// newDeltaStore is a test store whose Crashed hook is crashed (when set):
// the delta CRL is never parsed, so it needs no CA certificate.
func newDeltaStore(t *testing.T, crashed func(string) error) (*Store, string) {
	return newTestStore(t, Options{Crashed: crashed})
}

// A corrupt db/crl-delta is named, refuses a save and is a problem for
// CheckCRL: nothing is written over what a person should look at.
func TestDeltaCRLCorrupt(t *testing.T) {
	tests := []struct{ name, data string }{
		{"no newline", "12"},
		{"not a number", "twelve\nDER"},
		{"negative", "-12\nDER"},
		{"no DER", "12\n"},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, p := newDeltaStore(t, nil)
			name := filepath.Join(p, DeltaCRLFile)
			if err := os.WriteFile(name, []byte(tt.data), 0o644); err != nil {
				t.Fatal(err)
			}
			want := `corrupt delta CRL file "` + name + `": want a CRL number in decimal, a newline, then the CRL's DER`
			if _, _, err := s.DeltaCRL(); err == nil || err.Error() != want {
				t.Errorf("DeltaCRL() error = %v; want %s", err, want)
			}
			if saved, err := s.SaveDeltaCRL(big.NewInt(13), []byte("DER")); saved || err == nil || err.Error() != want {
				t.Errorf("SaveDeltaCRL() over it = %v, %v; want %s", saved, err, want)
			}
			var problems []string
			if _, err := s.CheckCRL(func(string) {}, func(p string) { problems = append(problems, p) }); err != nil || !slices.Contains(problems, want) {
				t.Errorf("CheckCRL() = %v, problems %q; want the problem %s", err, problems, want)
			}
			if got, _ := os.ReadFile(name); string(got) != tt.data {
				t.Errorf("db/crl-delta = %q after a refused save and a check; want %q, untouched", got, tt.data)
			}
			if _, err := os.Stat(filepath.Join(p, store.DeltaCRLDERFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused save wrote %s: %v", store.DeltaCRLDERFile, err)
			}
		})
	}
}

// A save writes db/crl-delta, crl-delta.pem and crl-delta.der in that
// order; a crash after any of them leaves a current delta whose number
// and DER belong together.
func TestDeltaCRLCrash(t *testing.T) {
	order := []string{DeltaCRLFile, store.DeltaCRLPEMFile, store.DeltaCRLDERFile}
	errCrash := errors.New("killed")
	for i, at := range order {
		t.Run(at, func(t *testing.T) {
			var written []string
			s, _ := newDeltaStore(t, func(file string) error {
				written = append(written, file)
				if file == at {
					return errCrash
				}
				return nil
			})
			if _, err := s.SaveDeltaCRL(big.NewInt(7), []byte("delta 7")); !errors.Is(err, errCrash) {
				t.Fatalf("SaveDeltaCRL() = %v; want the crash", err)
			}
			if want := order[:i+1]; !slices.Equal(written, want) {
				t.Errorf("files written = %q; want %q", written, want)
			}
			der, n, err := s.DeltaCRL()
			if err != nil || string(der) != "delta 7" || n.Int64() != 7 {
				t.Errorf("DeltaCRL() after the crash = %q, %v, %v; want delta 7", der, n, err)
			}
		})
	}
}

// What is not a regular file at db/crl-delta is refused, naming it.
func TestDeltaCRLNotRegular(t *testing.T) {
	s, p := newDeltaStore(t, nil)
	name := filepath.Join(p, DeltaCRLFile)
	if err := os.Mkdir(name, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.DeltaCRL(); err == nil || !strings.Contains(err.Error(), name) {
		t.Errorf("DeltaCRL() of a directory = %v; want an error naming %s", err, name)
	}
	if _, err := s.DeltaCRLStamp(); !errors.Is(err, store.ErrNotRegular) || !strings.Contains(err.Error(), name) {
		t.Errorf("DeltaCRLStamp() of a directory = %v; want store.ErrNotRegular naming %s", err, name)
	}
}

// Repair keeps db/crl-delta, and removes what an interrupted write of it
// left.
func TestRepairKeepsDeltaCRL(t *testing.T) {
	s, p := newDeltaStore(t, nil)
	if _, err := s.SaveDeltaCRL(big.NewInt(7), []byte("delta 7")); err != nil {
		t.Fatal(err)
	}
	temp := filepath.Join(p, "db", atomicfile.TempPrefix+"crl-delta.1")
	if err := os.WriteFile(temp, []byte("8\ndelta"), 0o644); err != nil {
		t.Fatal(err)
	}
	var notes []string
	note := func(s string) { notes = append(notes, s) }
	if err := s.Repair(note, note); err != nil || len(notes) != 0 {
		t.Errorf("Repair() = %v, notes %q; want nothing to say", err, notes)
	}
	if _, err := os.Stat(temp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Repair() left %s: %v", temp, err)
	}
	if der, _, err := s.DeltaCRL(); err != nil || !bytes.Equal(der, []byte("delta 7")) {
		t.Errorf("DeltaCRL() after Repair() = %q, %v; want delta 7", der, err)
	}
}
