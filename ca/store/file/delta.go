package file

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/big"

	"minica/ca/store"
)

// DeltaCRLFile holds the file store's current delta CRL: its number in
// decimal and a newline, then its DER. One file replaced atomically keeps
// the number and the CRL together whatever a crash interrupts, without
// reading the number out of a CRL that the store does not judge; the
// published copy (crl-delta.pem, then crl-delta.der) is written after it,
// and CheckCRL rewrites a copy that a crash left behind.
const DeltaCRLFile = "db/crl-delta"

// SaveDeltaCRL writes DeltaCRLFile, then the published copy, unless the
// current delta's number is higher than number.
func (s *Store) SaveDeltaCRL(number *big.Int, der []byte) (bool, error) {
	if err := store.CheckDeltaToSave(number, der); err != nil {
		return false, err
	}
	_, current, err := s.DeltaCRL()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if current != nil && current.Cmp(number) > 0 {
		return false, nil
	}
	return true, s.writeDeltaCRL(number, der)
}

// writeDeltaCRL writes DeltaCRLFile, then the published copy, calling
// the crash hook after each file.
func (s *Store) writeDeltaCRL(number *big.Int, der []byte) error {
	data := append([]byte(number.String()+"\n"), der...)
	if err := s.dir.WriteAtomic(DeltaCRLFile, data, 0o644); err != nil {
		return fmt.Errorf("saving delta CRL %s: %w", number, err)
	}
	if err := s.crash(DeltaCRLFile); err != nil {
		return err
	}
	return store.WriteDeltaCRLCopy(s.dir, der, s.crash)
}

// DeltaCRL reads DeltaCRLFile, which must be a regular file.
func (s *Store) DeltaCRL() ([]byte, *big.Int, error) {
	data, err := s.dir.ReadFile(DeltaCRLFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w in %q", store.ErrNoDeltaCRL, s.dir.Path())
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading delta CRL %q: %w", s.dir.Join(DeltaCRLFile), err)
	}
	line, der, ok := bytes.Cut(data, []byte{'\n'})
	number, numOK := new(big.Int).SetString(string(line), 10)
	if !ok || !numOK || number.Sign() < 0 || len(der) == 0 {
		return nil, nil, fmt.Errorf("corrupt delta CRL file %q: want a CRL number in decimal, a newline, then the CRL's DER", s.dir.Join(DeltaCRLFile))
	}
	return der, number, nil
}

// DeltaCRLStamp is the stamp of DeltaCRLFile, which must be a regular file.
func (s *Store) DeltaCRLStamp() (store.FileStamp, error) {
	return store.FileCRLStamp(s.dir, DeltaCRLFile, store.ErrNoDeltaCRL)
}

// loadDeltaCRL makes d's delta CRL the current one, or removes the
// current one and its published copy when d has none: a copy carries the
// source's delta, never the target's.
func (s *Store) loadDeltaCRL(d *store.Contents) error {
	if d.DeltaCRL != nil {
		if err := store.CheckDeltaToSave(d.DeltaNumber, d.DeltaCRL); err != nil {
			return err
		}
		return s.writeDeltaCRL(d.DeltaNumber, d.DeltaCRL)
	}
	for _, f := range []string{DeltaCRLFile, store.DeltaCRLPEMFile, store.DeltaCRLDERFile} {
		if err := s.dir.Root().Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
