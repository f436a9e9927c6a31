package file

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"minica/ca/store"
	"minica/internal/atomicfile"
	"minica/internal/cadir"
)

// NameIndexDir holds the name index: one file per certificate name, which
// lists the serial of every record issued under it, one 32-digit line each,
// in issuance order. It is derived from the records, which stay the source
// of truth: Issue appends to it before the certificate is signed, and
// Check rebuilds it from the records. It lets RecordsByName cost one file
// read plus one per certificate of the name, whatever the database size.
const NameIndexDir = "db/names"

// NameIndexPath returns the path of the index file of name, relative to
// the CA directory.
func NameIndexPath(name string) string { return path.Join(NameIndexDir, name) }

// indexName appends serial to the index of name. Like the store.Reservation that
// precedes it, it is not synced: Check rebuilds an index that a power loss
// damaged. A CA directory without an index (made by an older minica) gets
// one first, built by one of the reservations that find it missing. The
// caller holds the lock.
func (s *Store) indexName(name, serial string) error {
	err := s.appendIndex(NameIndexPath(name), serial)
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	s.indexMu.Lock()
	defer s.indexMu.Unlock()
	if _, serr := s.dir.Stat(NameIndexDir); errors.Is(serr, fs.ErrNotExist) {
		if err := s.Reindex(); err != nil {
			return err
		}
	}
	return s.appendIndex(NameIndexPath(name), serial)
}

func (s *Store) appendIndex(file, serial string) error {
	f, err := s.dir.Root().OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("opening name index %q: %w", s.dir.Join(file), err)
	}
	_, err = f.WriteString(serial + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing name index %q: %w", s.dir.Join(file), err)
	}
	return nil
}

// indexedSerials returns the serials the index lists for name, each once;
// ok is false when the CA directory has no index at all. A line cut short
// by a crash is skipped.
func (s *Store) indexedSerials(name string) (serials []string, ok bool, err error) {
	data, ok, err := s.readIndex(name)
	if err != nil || data == nil {
		return nil, ok, err
	}
	seen := make(map[string]bool)
	for line := range strings.Lines(string(data)) {
		s, complete := strings.CutSuffix(line, "\n")
		if !complete || !store.IsSerialHex(s) || seen[s] {
			continue
		}
		seen[s] = true
		serials = append(serials, s)
	}
	return serials, true, nil
}

// readIndex reads the index file of name; data is nil when the index does
// not list name, and ok false when there is no index at all. The index
// directory is opened first and the file read inside it, so that a name
// the index lacks (every new name of a batch, looked up several times)
// costs one failed lookup, not a second walk of the path to tell a missing
// file from a missing index.
func (s *Store) readIndex(name string) (data []byte, ok bool, err error) {
	names, err := s.dir.OpenSub(NameIndexDir)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := s.dir.Stat(NameIndexDir); errors.Is(serr, fs.ErrNotExist) {
			return nil, false, nil
		}
		// Open again: a rebuild by Check may have swapped the index
		// directory between the two calls above.
		names, err = s.dir.OpenSub(NameIndexDir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, true, nil
		}
	}
	if err != nil {
		return nil, true, fmt.Errorf("opening name index %q: %w", s.dir.Join(NameIndexDir), err)
	}
	defer names.Close()
	data, err = names.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, true, fmt.Errorf("reading name index %q: %w", s.dir.Join(NameIndexPath(name)), err)
	}
	return data, true, nil
}

// Reindex writes the name index afresh from every record, in a
// temporary directory that then replaces the old index. It costs a pass
// over the whole database (one append per record), so only Check and the
// first issuance into a CA directory without an index run it. Records
// that do not decode are left out: Check rebuilds them first. The caller
// holds the lock.
func (s *Store) Reindex() error {
	entries, err := fs.ReadDir(s.dir.Root().FS(), "db")
	if err != nil {
		return fmt.Errorf("listing %q: %w", s.dir.Join("db"), err)
	}
	for _, e := range entries { // what an interrupted rebuild left
		if e.IsDir() && cadir.IsTemp(e.Name()) {
			if err := s.dir.Root().RemoveAll(path.Join("db", e.Name())); err != nil {
				return fmt.Errorf("removing %q: %w", s.dir.Join(path.Join("db", e.Name())), err)
			}
		}
	}
	tmp, err := tempName("db", "names")
	if err != nil {
		return err
	}
	if err := s.dir.Root().Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("creating %q: %w", s.dir.Join(tmp), err)
	}
	defer s.dir.Root().RemoveAll(tmp)
	for rec, err := range s.Records() {
		var corrupt *store.CorruptRecordError
		if errors.As(err, &corrupt) {
			continue
		}
		if err != nil {
			return err
		}
		if err := s.appendIndex(path.Join(tmp, rec.Name), rec.Serial); err != nil {
			return err
		}
	}
	old, err := tempName("db", "names-old")
	if err != nil {
		return err
	}
	if err := s.dir.Root().Rename(NameIndexDir, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replacing %q: %w", s.dir.Join(NameIndexDir), err)
	}
	defer s.dir.Root().RemoveAll(old)
	if err := s.dir.Root().Rename(tmp, NameIndexDir); err != nil {
		return fmt.Errorf("replacing %q: %w", s.dir.Join(NameIndexDir), err)
	}
	return s.dir.SyncDir("db")
}

// tempName returns a fresh temporary name in dir, which Check removes if
// it is left behind.
func tempName(dir, what string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return path.Join(dir, atomicfile.TempPrefix+what+"-"+hex.EncodeToString(b[:])), nil
}

// scanByName returns the records of name by reading every record: the
// lookup of a CA directory that has no name index yet, until the next
// issuance or Check builds one.
func (s *Store) scanByName(name string) ([]*store.Record, error) {
	var recs []*store.Record
	for r, err := range s.Records() {
		var corrupt *store.CorruptRecordError
		if errors.As(err, &corrupt) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if r.Name == name {
			recs = append(recs, r)
		}
	}
	return recs, nil
}
