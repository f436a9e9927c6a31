package file

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"strings"

	"minica/ca/store"
)

// Load writes the copy d into an empty file store: the record files (as
// they are, not synced one by one), the name index built from them, one
// sync of the whole file system (or of db/), then the revocation log, the
// enrollments, the ACME objects, crlnumber (at least the delta CRL's
// number), the delta CRL's files (removed when d has none) and the CRL
// files.
func (s *Store) Load(d *store.Contents) (int, error) {
	if err := s.checkEmpty(); err != nil {
		return 0, err
	}
	if err := s.dir.MkdirAll(NameIndexDir); err != nil {
		return 0, err
	}
	n := 0
	for rec, err := range d.Records {
		if err != nil {
			return n, err
		}
		f, err := s.create(rec)
		if err != nil {
			return n, fmt.Errorf("copying record %s: %w", rec.Serial, err)
		}
		n++
		if err := f.Close(); err != nil {
			return n, err
		}
	}
	if err := s.Reindex(); err != nil {
		return n, err
	}
	if done, err := s.dir.SyncFS(); err != nil {
		return n, err
	} else if !done {
		if err := s.dir.SyncDir("db"); err != nil {
			return n, err
		}
	}
	if len(d.Events) > 0 {
		err := s.dir.WriteAtomicFrom(RevocationLog, 0o644, func(w io.Writer) error {
			bw := bufio.NewWriter(w)
			for _, ev := range d.Events {
				line, _ := json.Marshal(ev)
				bw.Write(append(line, '\n'))
			}
			return bw.Flush()
		})
		if err != nil {
			return n, err
		}
	}
	for _, e := range d.Enrollments {
		if err := s.CreateEnrollment(e); err != nil {
			return n, fmt.Errorf("copying enrollment %s: %w", e.ID, err)
		}
	}
	if err := s.dir.MkdirAll(enrollNamesDir); err != nil {
		return n, err
	}
	for _, o := range d.Objects {
		if err := s.CreateObject(o); err != nil {
			return n, fmt.Errorf("copying ACME %s %s: %w", o.Kind, o.ID, err)
		}
	}
	last, err := s.LastCRLNumber()
	if err != nil {
		return n, err
	}
	for _, used := range []*big.Int{d.LastNumber, d.DeltaNumber} {
		if used != nil && used.Cmp(last) > 0 {
			last = used
		}
	}
	if err := s.dir.WriteAtomic(CRLNumberFile, []byte(last.String()+"\n"), 0o644); err != nil {
		return n, err
	}
	if err := s.loadDeltaCRL(d); err != nil {
		return n, err
	}
	if d.CRL != nil {
		return n, store.WriteCRLCopy(s.dir, d.CRL, func(string) error { return nil })
	}
	for _, f := range []string{store.CRLPEMFile, store.CRLDERFile} {
		if err := s.dir.Root().Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, err
		}
	}
	return n, nil
}

// checkEmpty fails with store.ErrStoreNotEmpty when s holds a record, a
// revocation log, an enrollment or an ACME object. The nonces do not
// count: a copy does not carry them.
func (s *Store) checkEmpty() error {
	for _, err := range s.Records() {
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: %q holds records", store.ErrStoreNotEmpty, s.dir.Path())
	}
	if _, err := s.dir.Stat(RevocationLog); err == nil {
		return fmt.Errorf("%w: %q has a revocation log", store.ErrStoreNotEmpty, s.dir.Join(RevocationLog))
	}
	for range s.Enrollments() {
		return fmt.Errorf("%w: %q holds enrollments", store.ErrStoreNotEmpty, s.dir.Path())
	}
	kinds, err := s.ObjectKinds()
	if err != nil {
		return err
	}
	if len(kinds) > 0 {
		return fmt.Errorf("%w: %q holds ACME objects (%s)", store.ErrStoreNotEmpty, s.dir.Join(ACMEDir), strings.Join(kinds, ", "))
	}
	return nil
}
