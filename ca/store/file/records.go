package file

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"minica/ca/store"
	"minica/ca/store/recordjson"
	"minica/internal/cadir"
	"os"
	"path"
	"slices"
	"strings"
)

// RecordPath returns the path of a serial's record file, relative to the
// CA directory.
func RecordPath(serial string) string { return path.Join("db", serial[:2], serial+".json") }

// reservedFile is a store.Reservation of the file store: the pending record's
// file, open for Complete to append the completed record to.
type reservedFile struct{ f *os.File }

func (r *reservedFile) Release() { r.f.Close() }

// currentLine returns the last line of a record file that ends in a
// newline: a record file holds one JSON line per state the record reached
// (issuance appends the completed record to the pending one), and a line
// cut short by a crash is not a state. It returns nil when there is none.
func currentLine(data []byte) []byte {
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	if len(data) == 0 {
		return nil
	}
	return data[bytes.LastIndexByte(data[:len(data)-1], '\n')+1:]
}

func decodeRecord(data []byte, file string) (*store.Record, error) {
	corrupt := func(err error) error {
		return &store.CorruptRecordError{File: file, Serial: strings.TrimSuffix(path.Base(file), ".json"), Err: err}
	}
	r, err := recordjson.Decode(currentLine(data))
	if err != nil {
		return nil, corrupt(err)
	}
	if len(r.Serial) != 32 || path.Base(file) != r.Serial+".json" {
		return nil, corrupt(fmt.Errorf("serial %q does not match the file name", r.Serial))
	}
	if store.ValidateName(r.Name) != nil {
		return nil, corrupt(fmt.Errorf("invalid name %q", r.Name))
	}
	return r, nil
}

// Reserve creates the pending record of a new serial with O_EXCL, and
// appends the serial to its name's index, voiding the record when that
// fails. Neither is synced: every other process sees the store.Reservation at
// once, and after a power loss Check rebuilds a lost or unreadable one
// from the certificate files, which are synced before issuance reports
// success, and rebuilds the index from the records.
func (s *Store) Reserve(r *store.Record) (store.Reservation, error) {
	f, err := s.create(r)
	if err != nil {
		return nil, err
	}
	// Indexed before the certificate exists, so that a certificate on
	// disk is always found by its name.
	if err := s.indexName(r.Name, r.Serial); err != nil {
		f.Close()
		v := *r
		v.Status = store.StatusVoid
		if verr := s.PutRecord(&v); verr != nil {
			err = errors.Join(err, fmt.Errorf("voiding reserved serial %s: %w", r.Serial, verr))
		}
		return nil, err
	}
	return &reservedFile{f}, nil
}

// create creates the file of a new record and returns it open for
// Complete; it fails with an error matching fs.ErrExist when the serial is
// taken.
func (s *Store) create(r *store.Record) (*os.File, error) {
	shard, _, err := s.dir.MkdirSub(path.Dir(RecordPath(r.Serial)))
	if err != nil {
		return nil, err
	}
	defer shard.Close()
	return shard.CreateExclusiveLazily(r.Serial+".json", store.EncodeRecord(r), 0o644)
}

// ReserveGroup reserves each record as Reserve does; when one fails, those
// reserved before it are voided, so that none of the group is pending.
func (s *Store) ReserveGroup(rs []*store.Record) ([]store.Reservation, error) {
	res := make([]store.Reservation, 0, len(rs))
	for _, r := range rs {
		rv, err := s.Reserve(r)
		if err != nil {
			for i, done := range res {
				done.Release()
				v := *rs[i]
				v.Status = store.StatusVoid
				if verr := s.PutRecord(&v); verr != nil {
					err = errors.Join(err, fmt.Errorf("voiding reserved serial %s: %w", v.Serial, verr))
				}
			}
			return nil, err
		}
		res = append(res, rv)
	}
	return res, nil
}

// Complete appends the completed record to the pending one in the file
// Reserve created, without a sync: if a power loss undoes it, Check
// completes the record again from the synced certificate. Appending keeps
// the record's inode: replacing it would free one per certificate, and
// ext4 without a journal then skips every recently freed inode when it
// allocates the next, a cost that grows with the issuance rate.
func (s *Store) Complete(res store.Reservation, r *store.Record) error {
	rf := res.(*reservedFile)
	defer rf.Release()
	if _, err := rf.f.Write(store.EncodeRecord(r)); err != nil {
		return fmt.Errorf("writing %q: %w", s.dir.Join(RecordPath(r.Serial)), err)
	}
	return nil
}

// CompleteGroup completes each store.Reservation as Complete does.
func (s *Store) CompleteGroup(res []store.Reservation, rs []*store.Record) error {
	var errs []error
	for i := range res {
		if err := s.Complete(res[i], rs[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// PutRecord replaces an existing record atomically and durably.
func (s *Store) PutRecord(r *store.Record) error {
	return s.dir.WriteAtomic(RecordPath(r.Serial), store.EncodeRecord(r), 0o644)
}

// UpdateRecord appends r's new state to its record file (see currentLine),
// without a sync.
func (s *Store) UpdateRecord(r *store.Record) error {
	file := RecordPath(r.Serial)
	f, err := s.dir.Root().OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("opening %q: %w", s.dir.Join(file), err)
	}
	_, err = f.Write(store.EncodeRecord(r))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %q: %w", s.dir.Join(file), err)
	}
	return nil
}

// store.Record reads the record file of serial.
func (s *Store) Record(hex string) (*store.Record, error) {
	if len(hex) != 32 {
		return nil, fmt.Errorf("serial %s: %w", hex, store.ErrNotFound)
	}
	file := RecordPath(hex)
	data, err := s.dir.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("serial %s: %w", hex, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading record %q: %w", s.dir.Join(file), err)
	}
	return decodeRecord(data, s.dir.Join(file))
}

// RecordsByName finds name's records through the name index, so that it
// costs one file read per certificate of the name, whatever the database
// size; in a CA directory that has no index yet it reads every record.
func (s *Store) RecordsByName(name string) ([]*store.Record, error) {
	serials, indexed, err := s.indexedSerials(name)
	if err != nil {
		return nil, err
	}
	var recs []*store.Record
	if !indexed {
		if recs, err = s.scanByName(name); err != nil {
			return nil, err
		}
	}
	for _, serial := range serials {
		r, err := s.Record(serial)
		if errors.Is(err, store.ErrNotFound) {
			continue // Check removed an unreadable store.Reservation
		}
		if err != nil {
			return nil, err
		}
		if r.Name == name {
			recs = append(recs, r)
		}
	}
	recs = slices.DeleteFunc(recs, func(r *store.Record) bool { return r.Status == store.StatusVoid })
	store.SortByIssued(recs)
	return recs, nil
}

// Records reads one shard directory at a time.
func (s *Store) Records() iter.Seq2[*store.Record, error] {
	return func(yield func(*store.Record, error) bool) {
		dirs, err := s.shardDirs()
		if err != nil {
			yield(nil, err)
			return
		}
		for _, dir := range dirs {
			if !s.shardRecords(dir, yield) {
				return
			}
		}
	}
}

// RecordParts returns one part per shard directory.
func (s *Store) RecordParts() ([]iter.Seq2[*store.Record, error], error) {
	dirs, err := s.shardDirs()
	if err != nil {
		return nil, err
	}
	parts := make([]iter.Seq2[*store.Record, error], len(dirs))
	for i, dir := range dirs {
		parts[i] = func(yield func(*store.Record, error) bool) { s.shardRecords(dir, yield) }
	}
	return parts, nil
}

// shardDirs lists the shard directories of db/ in order.
func (s *Store) shardDirs() ([]string, error) {
	shards, err := fs.ReadDir(s.dir.Root().FS(), "db")
	if err != nil {
		return nil, fmt.Errorf("listing %q: %w", s.dir.Join("db"), err)
	}
	var dirs []string
	for _, shard := range shards {
		switch shard.Name() {
		case path.Base(NameIndexDir), path.Base(EnrollDir), path.Base(ACMEDir):
			continue
		}
		if !shard.IsDir() || cadir.IsTemp(shard.Name()) {
			continue
		}
		dirs = append(dirs, path.Join("db", shard.Name()))
	}
	return dirs, nil
}

func (s *Store) shardRecords(dir string, yield func(*store.Record, error) bool) bool {
	// One os.Root per shard: each record then costs a single openat
	// instead of one per path component.
	shard, err := s.dir.Root().OpenRoot(dir)
	if err != nil {
		return yield(nil, fmt.Errorf("opening %q: %w", s.dir.Join(dir), err))
	}
	defer shard.Close()
	files, err := cadir.OpenScanner(shard)
	if err != nil {
		return yield(nil, fmt.Errorf("opening %q: %w", s.dir.Join(dir), err))
	}
	defer files.Close()
	names, err := files.Names()
	if err != nil {
		return yield(nil, fmt.Errorf("listing %q: %w", s.dir.Join(dir), err))
	}
	buf := make([]byte, 0, 4096)
	for _, name := range names {
		if cadir.IsTemp(name) || !strings.HasSuffix(name, ".json") {
			continue
		}
		file := s.dir.Join(path.Join(dir, name))
		buf, err = files.Read(name, buf[:0])
		if err != nil {
			return yield(nil, fmt.Errorf("reading record %q: %w", file, err))
		}
		r, err := decodeRecord(buf, file)
		if !yield(r, err) {
			return false
		}
	}
	return true
}
