package file

import (
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"minica/ca/store"
	"minica/internal/cadir"
)

// ACMEDir holds the ACME objects, one file per object at
// ACMEDir/KIND/ID.json, and the nonces, one file each at
// ACMEDir/nonces/NONCE (its content the expiry in Unix seconds). Nonce
// files are never synced: a crash may lose them, and a client told
// badNonce asks for another.
const (
	ACMEDir   = "db/acme"
	nonceDir  = "db/acme/nonces"
	nonceKind = "nonces"
)

// pruneEvery is how many nonces are added between two sweeps of the
// expired ones.
const pruneEvery = 1024

func objectPath(kind, id string) string { return path.Join(ACMEDir, kind, id+".json") }

func checkObject(kind, id string) error {
	if !store.IsObjectKind(kind) || kind == nonceKind {
		return fmt.Errorf("invalid ACME object kind %q", kind)
	}
	if !store.IsObjectID(id) {
		return fmt.Errorf("invalid ACME object ID %q", id)
	}
	return nil
}

// CreateObject writes the file of a new object durably, linked into place
// so that a taken ID fails with fs.ErrExist and readers see all or nothing.
func (s *Store) CreateObject(o store.Object) error {
	if err := checkObject(o.Kind, o.ID); err != nil {
		return err
	}
	if err := s.dir.MkdirAll(path.Join(ACMEDir, o.Kind)); err != nil {
		return fmt.Errorf("creating %q: %w", s.dir.Join(path.Join(ACMEDir, o.Kind)), err)
	}
	if err := s.dir.CreateExclusive(objectPath(o.Kind, o.ID), o.Data, 0o600); err != nil {
		return fmt.Errorf("creating ACME %s %s: %w", o.Kind, o.ID, err)
	}
	return nil
}

// PutObject replaces the file of an object atomically and durably.
func (s *Store) PutObject(o store.Object) error {
	if err := checkObject(o.Kind, o.ID); err != nil {
		return err
	}
	if err := s.dir.MkdirAll(path.Join(ACMEDir, o.Kind)); err != nil {
		return fmt.Errorf("creating %q: %w", s.dir.Join(path.Join(ACMEDir, o.Kind)), err)
	}
	if err := s.dir.WriteAtomic(objectPath(o.Kind, o.ID), o.Data, 0o600); err != nil {
		return fmt.Errorf("writing ACME %s %s: %w", o.Kind, o.ID, err)
	}
	return nil
}

// Object reads the file of an object.
func (s *Store) Object(kind, id string) (store.Object, error) {
	if err := checkObject(kind, id); err != nil {
		return store.Object{}, fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	data, err := s.dir.ReadFile(objectPath(kind, id))
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
	err := s.dir.Root().Remove(objectPath(kind, id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing ACME %s %s: %w", kind, id, err)
	}
	return s.dir.SyncDir(path.Join(ACMEDir, kind))
}

// AddNonce creates the nonce's file, unsynced.
func (s *Store) AddNonce(nonce string, expires time.Time) error {
	if !store.IsNonce(nonce) {
		return fmt.Errorf("invalid nonce %q", nonce)
	}
	if s.nonces.Add(1)%pruneEvery == 0 {
		if seen := s.nonceNow.Load(); seen != 0 {
			s.pruneNonces(time.Unix(seen, 0))
		}
	}
	data := []byte(strconv.FormatInt(expires.Unix(), 10))
	f, err := s.dir.CreateExclusiveLazily(path.Join(nonceDir, nonce), data, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if err = s.dir.MkdirAll(nonceDir); err == nil {
			f, err = s.dir.CreateExclusiveLazily(path.Join(nonceDir, nonce), data, 0o600)
		}
	}
	if err != nil {
		return fmt.Errorf("adding a nonce: %w", err)
	}
	return f.Close()
}

// UseNonce reads the nonce's file and removes it: of two replicas that
// read it, only the one whose remove succeeds has used it.
func (s *Store) UseNonce(nonce string, now time.Time) (bool, error) {
	if !store.IsNonce(nonce) {
		return false, nil
	}
	s.nonceNow.Store(now.Unix())
	name := path.Join(nonceDir, nonce)
	data, err := s.dir.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading a nonce: %w", err)
	}
	err = s.dir.Root().Remove(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("using a nonce: %w", err)
	}
	exp, err := strconv.ParseInt(string(data), 10, 64)
	return err == nil && now.Unix() < exp, nil
}

// removeACMETemps removes the temporary files that interrupted writes
// left in ACMEDir and in the directories of its kinds and of the nonces.
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

// pruneNonces removes the nonce files expired at now.
func (s *Store) pruneNonces(now time.Time) {
	entries, err := fs.ReadDir(s.dir.Root().FS(), nonceDir)
	if err != nil {
		return
	}
	for _, ent := range entries {
		name := path.Join(nonceDir, ent.Name())
		data, err := s.dir.ReadFile(name)
		if err != nil {
			continue
		}
		if exp, err := strconv.ParseInt(string(data), 10, 64); err != nil || now.Unix() >= exp {
			s.dir.Root().Remove(name)
		}
	}
}
