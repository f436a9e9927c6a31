package file

import (
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"minica/ca/store"
	"minica/internal/atomicfile"
	"minica/internal/cadir"
)

// ACMEDir holds the ACME objects, one file per object at
// ACMEDir/KIND/ID.json, and the nonces' table (NonceTable). "nonces" is
// no kind in any engine (and was the nonces' directory here).
const (
	ACMEDir   = "db/acme"
	nonceKind = "nonces"
)

func checkObject(kind, id string) error {
	if !store.IsObjectKind(kind) || kind == nonceKind {
		return fmt.Errorf("invalid ACME object kind %q", kind)
	}
	if !store.IsObjectID(id) {
		return fmt.Errorf("invalid ACME object ID %q", id)
	}
	return nil
}

// acmeDirs are the open directories of db/acme: one per kind. A file in
// one is reached with one system call instead of one per path element,
// and without a MkdirAll per write.
type acmeDirs struct {
	mu   sync.Mutex
	dirs map[string]*cadir.Dir
}

// acmeSub returns the open directory db/acme/name, creating it when
// create is set; without, a missing one gives an error matching
// fs.ErrNotExist.
func (s *Store) acmeSub(name string, create bool) (*cadir.Dir, error) {
	s.acme.mu.Lock()
	defer s.acme.mu.Unlock()
	if d := s.acme.dirs[name]; d != nil {
		return d, nil
	}
	rel := path.Join(ACMEDir, name)
	if create {
		if err := s.dir.MkdirAll(rel); err != nil {
			return nil, fmt.Errorf("creating %q: %w", s.dir.Join(rel), err)
		}
	}
	d, err := s.dir.OpenSub(rel)
	if err != nil {
		return nil, fmt.Errorf("opening %q: %w", s.dir.Join(rel), err)
	}
	if s.acme.dirs == nil {
		s.acme.dirs = map[string]*cadir.Dir{}
	}
	s.acme.dirs[name] = d
	return d, nil
}

// closeACME closes the open directories of db/acme.
func (s *Store) closeACME() {
	s.acme.mu.Lock()
	defer s.acme.mu.Unlock()
	for _, d := range s.acme.dirs {
		d.Close()
	}
	s.acme.dirs = nil
}

// objectFile checks o's kind and ID and returns the directory of its
// kind, made if need be, and its file's name there.
func (s *Store) objectFile(o store.Object) (*cadir.Dir, string, error) {
	if err := checkObject(o.Kind, o.ID); err != nil {
		return nil, "", err
	}
	d, err := s.acmeSub(o.Kind, true)
	return d, o.ID + ".json", err
}

// CreateObject writes the file of a new object (a log of one state, see
// objectMagic), linked into place so that a taken ID fails with
// fs.ErrExist and readers see all or nothing; durably unless o is
// Volatile.
func (s *Store) CreateObject(o store.Object) error {
	d, name, err := s.objectFile(o)
	if err != nil {
		return err
	}
	data := encodeObject(o.Data)
	if o.Volatile {
		var f *os.File
		if f, err = d.CreateExclusiveLazily(name, data, 0o600); err == nil {
			err = f.Close()
		}
	} else {
		err = d.CreateExclusive(name, data, 0o600)
	}
	if err != nil {
		return fmt.Errorf("creating ACME %s %s: %w", o.Kind, o.ID, err)
	}
	return nil
}

// PutObject makes o the current state of its object atomically: durably
// by a new file renamed over the old, or, when o is Volatile, by a state
// appended to its log without a sync (see objectMagic).
func (s *Store) PutObject(o store.Object) error {
	d, name, err := s.objectFile(o)
	if err != nil {
		return err
	}
	if o.Volatile {
		err = appendObject(d, name, o.Data)
	} else {
		err = d.WriteAtomic(name, encodeObject(o.Data), 0o600)
	}
	if err != nil {
		return fmt.Errorf("writing ACME %s %s: %w", o.Kind, o.ID, err)
	}
	return nil
}

// replaceLazily replaces name in d with data through a temporary file
// renamed over it, syncing nothing.
func replaceLazily(d *cadir.Dir, name string, data []byte) error {
	f, tmp, err := atomicfile.WriteTemp(d.FS(), name, 0o600, atomicfile.Bytes(data), false)
	if err != nil {
		return err
	}
	f.Close()
	if err := d.FS().Rename(tmp, name); err != nil {
		d.FS().Remove(tmp)
		return fmt.Errorf("renaming %q: %w", d.Join(name), err)
	}
	return nil
}

// Object reads the current state of an object from its file.
func (s *Store) Object(kind, id string) (store.Object, error) {
	if err := checkObject(kind, id); err != nil {
		return store.Object{}, fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	d, err := s.acmeSub(kind, false)
	if err != nil {
		return store.Object{}, fmt.Errorf("reading ACME %s %s: %w", kind, id, err)
	}
	data, err := d.ReadFile(id + ".json")
	if err == nil {
		data, err = decodeObject(data)
	}
	if err != nil {
		return store.Object{}, fmt.Errorf("reading ACME %s %s: %w", kind, id, err)
	}
	return store.Object{Kind: kind, ID: id, Data: data}, nil
}

// Objects reads the files of kind in ID order (not name order: ".json"
// sorts after some of the characters of an ID).
func (s *Store) Objects(kind string) iter.Seq2[store.Object, error] {
	return func(yield func(store.Object, error) bool) {
		if err := checkObject(kind, "x"); err != nil {
			yield(store.Object{}, err)
			return
		}
		ids, err := s.objectIDs(kind, -1)
		if err != nil {
			yield(store.Object{}, err)
			return
		}
		for _, id := range ids {
			o, err := s.Object(kind, id)
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted since the listing
			}
			if !yield(o, err) {
				return
			}
		}
	}
}

// objectIDs returns the IDs of at most n objects of kind (all when n is
// negative), sorted; none when the kind has no directory.
func (s *Store) objectIDs(kind string, n int) ([]string, error) {
	dir := path.Join(ACMEDir, kind)
	entries, err := fs.ReadDir(s.dir.Root().FS(), dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %q: %w", s.dir.Join(dir), err)
	}
	var ids []string
	for _, ent := range entries {
		if len(ids) == n {
			break
		}
		id, ok := strings.CutSuffix(ent.Name(), ".json")
		if !ent.IsDir() && ok && !cadir.IsTemp(ent.Name()) && store.IsObjectID(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// ObjectKinds lists the directories of ACMEDir that hold an object file,
// nonces apart: a kind whose objects were all deleted keeps its
// directory, and holds no object.
func (s *Store) ObjectKinds() ([]string, error) {
	entries, err := fs.ReadDir(s.dir.Root().FS(), ACMEDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %q: %w", s.dir.Join(ACMEDir), err)
	}
	var kinds []string
	for _, ent := range entries {
		if !ent.IsDir() || checkObject(ent.Name(), "x") != nil {
			continue
		}
		ids, err := s.objectIDs(ent.Name(), 1)
		if err != nil {
			return nil, err
		}
		if len(ids) > 0 {
			kinds = append(kinds, ent.Name())
		}
	}
	return kinds, nil
}

// DeleteObject removes the file of an object and syncs its directory.
func (s *Store) DeleteObject(kind, id string) error {
	if err := checkObject(kind, id); err != nil {
		return err
	}
	d, err := s.acmeSub(kind, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = d.Root().Remove(id + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing ACME %s %s: %w", kind, id, err)
	}
	return d.SyncDir(".")
}

// removeACMETemps removes the temporary files that interrupted writes
// left in ACMEDir and in the directories of its kinds.
func (s *Store) removeACMETemps() error {
	entries, err := fs.ReadDir(s.dir.Root().FS(), ACMEDir)
	if err != nil {
		return fmt.Errorf("listing %q: %w", s.dir.Join(ACMEDir), err)
	}
	for _, ent := range entries {
		if ent.IsDir() && !cadir.IsTemp(ent.Name()) {
			if err := s.dir.RemoveTemps(path.Join(ACMEDir, ent.Name())); err != nil {
				return err
			}
		}
	}
	return s.dir.RemoveTemps(ACMEDir)
}
