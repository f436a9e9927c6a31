package file

import (
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"path"
	"strings"
	"sync"

	"minica/ca/store"
	"minica/internal/atomicfile"
	"minica/internal/cadir"
)

// EnrollDir holds one file per enrollment, named by its ID, and the
// name index EnrollDir/names/NAME (the ID of NAME's latest enrollment).
const (
	EnrollDir      = "db/enroll"
	enrollNamesDir = "db/enroll/names"
)

func enrollPath(id string) string { return path.Join(EnrollDir, id+".json") }

// CreateEnrollment writes the file of a new enrollment (failing with an
// error matching fs.ErrExist when its ID is taken) and points the name
// index at it. Each file is written whole under a temporary name, then
// linked (the enrollment, so that an ID is never reused) or renamed (the
// index) into place, so that readers see all or nothing; then both files
// and both directories are synced at once, one round of fsync instead of
// four in a row. Only then is the token shown, so a file that a power loss
// tore was never handed out: it reads as corrupt and counts as no link
// (see CA.CreateEnrollment and CA.Enrollments).
func (s *Store) CreateEnrollment(e store.EnrollmentData) error {
	if err := s.dir.MkdirAll(enrollNamesDir); err != nil {
		return fmt.Errorf("creating %q: %w", s.dir.Join(enrollNamesDir), err)
	}
	recName, idxName := enrollPath(e.ID), path.Join(enrollNamesDir, e.Name)
	rec, recTmp, err := atomicfile.WriteTemp(s.dir.FS(), recName, 0o600, atomicfile.Bytes(e.Data), false)
	if err != nil {
		return err
	}
	defer rec.Close()
	err = s.dir.FS().Link(recTmp, recName)
	s.dir.FS().Remove(recTmp)
	if err != nil {
		return fmt.Errorf("creating %q: %w", s.dir.Join(recName), err)
	}
	idx, idxTmp, err := atomicfile.WriteTemp(s.dir.FS(), idxName, 0o600, atomicfile.Bytes([]byte(e.ID+"\n")), false)
	if err != nil {
		s.dir.Root().Remove(recName)
		return err
	}
	defer idx.Close()
	if err := s.dir.FS().Rename(idxTmp, idxName); err != nil {
		s.dir.FS().Remove(idxTmp)
		s.dir.Root().Remove(recName)
		return fmt.Errorf("renaming %q: %w", s.dir.Join(idxName), err)
	}
	errs := make([]error, 4)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = rec.Sync() })
	wg.Go(func() { errs[1] = idx.Sync() })
	wg.Go(func() { errs[2] = s.dir.SyncDir(EnrollDir) })
	wg.Go(func() { errs[3] = s.dir.SyncDir(enrollNamesDir) })
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		s.dir.Root().Remove(recName) // never shown: take it back
		return fmt.Errorf("syncing enrollment %s: %w", e.ID, err)
	}
	return nil
}

// PutEnrollment replaces the file of an enrollment atomically and durably.
func (s *Store) PutEnrollment(e store.EnrollmentData) error {
	if err := s.dir.WriteAtomic(enrollPath(e.ID), e.Data, 0o600); err != nil {
		return fmt.Errorf("writing enrollment %s: %w", e.ID, err)
	}
	return nil
}

// Enrollment reads the file of id.
func (s *Store) Enrollment(id string) (store.EnrollmentData, error) {
	data, err := s.dir.ReadFile(enrollPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return store.EnrollmentData{}, fmt.Errorf("%w: %s", store.ErrEnrollmentUnknown, id)
	}
	if err != nil {
		return store.EnrollmentData{}, fmt.Errorf("reading enrollment %q: %w", s.dir.Join(enrollPath(id)), err)
	}
	return store.EnrollmentData{ID: id, Data: data, Where: fmt.Sprintf("%q", s.dir.Join(enrollPath(id)))}, nil
}

// EnrollmentByName reads the ID of name's latest enrollment from the
// name index, then its file.
func (s *Store) EnrollmentByName(name string) (store.EnrollmentData, error) {
	data, err := s.dir.ReadFile(path.Join(enrollNamesDir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return store.EnrollmentData{}, fmt.Errorf("%w for %q", store.ErrEnrollmentUnknown, name)
	}
	if err != nil {
		return store.EnrollmentData{}, fmt.Errorf("reading enrollment index of %q: %w", name, err)
	}
	id := strings.TrimSpace(string(data))
	if !store.IsEnrollmentID(id) {
		return store.EnrollmentData{}, fmt.Errorf("%w: %q", store.ErrEnrollmentUnknown, id)
	}
	return s.Enrollment(id)
}

// Enrollments reads the files of db/enroll in name order, which is ID
// order.
func (s *Store) Enrollments() iter.Seq2[store.EnrollmentData, error] {
	return func(yield func(store.EnrollmentData, error) bool) {
		entries, err := fs.ReadDir(s.dir.Root().FS(), EnrollDir)
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			yield(store.EnrollmentData{}, fmt.Errorf("listing %q: %w", s.dir.Join(EnrollDir), err))
			return
		}
		for _, ent := range entries {
			id, ok := strings.CutSuffix(ent.Name(), ".json")
			if ent.IsDir() || !ok || cadir.IsTemp(ent.Name()) {
				continue
			}
			if !store.IsEnrollmentID(id) {
				if !yield(store.EnrollmentData{}, fmt.Errorf("%w: %q", store.ErrEnrollmentUnknown, id)) {
					return
				}
				continue
			}
			if !yield(s.Enrollment(id)) {
				return
			}
		}
	}
}
