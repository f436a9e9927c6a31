//go:build !linux

package cadir

import (
	"os"
	"slices"

	"minica/internal/regfile"
)

// Scanner reads the small files of one directory through its os.Root
// (see scan_linux.go for the fast path).
type Scanner struct{ root *os.Root }

// OpenScanner opens the directory root for a scan.
func OpenScanner(root *os.Root) (*Scanner, error) { return &Scanner{root}, nil }

// Close releases the directory.
func (s *Scanner) Close() {}

// Names lists the directory's names in order without a stat per entry.
func (s *Scanner) Names() ([]string, error) {
	f, err := s.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// Read appends the content of name to buf, reusing its capacity.
func (s *Scanner) Read(name string, buf []byte) ([]byte, error) {
	f, err := regfile.Open(func(flag int) (*os.File, error) { return s.root.OpenFile(name, flag, 0) })
	if err != nil {
		return buf, err
	}
	defer f.Close()
	return ReadAppend(f, buf)
}
