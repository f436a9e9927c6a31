//go:build !linux

package ca

import (
	"os"
	"slices"

	"minica/internal/regfile"
)

// shardFiles reads the record files of one shard directory through its
// os.Root (see shardfiles_linux.go for the fast path).
type shardFiles struct{ root *os.Root }

func openShardFiles(root *os.Root) (*shardFiles, error) { return &shardFiles{root}, nil }

func (s *shardFiles) close() {}

// names lists the directory's names in order without a stat per entry.
func (s *shardFiles) names() ([]string, error) {
	f, err := s.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// read appends the content of name to buf, reusing its capacity.
func (s *shardFiles) read(name string, buf []byte) ([]byte, error) {
	f, err := regfile.Open(func(flag int) (*os.File, error) { return s.root.OpenFile(name, flag, 0) })
	if err != nil {
		return buf, err
	}
	defer f.Close()
	return readAppend(f, buf)
}
