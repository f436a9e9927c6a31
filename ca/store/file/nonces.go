package file

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"minica/ca/store"
	"minica/internal/flock"
	"minica/internal/regfile"
)

// The nonces live in one file of fixed slots, NonceTable, instead of a
// file each: a nonce costs a write to add and a locked read and write to
// use, and no file is created or removed, which is what most of the
// system time of an ACME request went to (ext4's inode allocation after
// many deletions).
//
// A nonce's slot is given by its serial (store.NonceSerial: the serving
// process numbers its nonces in turn, store.NewNonce), and holds the
// first 16 bytes of its SHA-256 (its check) and its expiry in Unix
// seconds; the table is never synced (a crash may lose nonces, and a
// client told badNonce asks for another) and never pruned: a slot is
// simply overwritten. A nonce is unknown once its slot is taken again:
// by the same process after 2^18 later nonces (more than 2 minutes at
// 2,000 requests a second, where a client uses its nonce within
// milliseconds), or by another process sharing the table, whose serials
// reach it by chance (one in 2^18 for each of its nonces). Slots were
// first given by a nonce's hash: then the few nonces handed out while a
// client held its own could take its slot, a few times in 100,000
// requests at 200 certificates a second, which cost clients of
// golang.org/x/crypto/acme a retry after 1 to 2 s. Nonces handed out
// under that scheme are unknown to this one: a client told badNonce once
// after an upgrade asks for another.
const (
	NonceTable  = "db/acme/nonces.tab"
	nonceSlots  = store.NonceSerials
	nonceSlot   = 32 // check (16 bytes), expiry (8), unused (8)
	nonceCheckN = 16
)

// nonceTable is the open NonceTable of a store. Using a nonce is done
// under mu (the goroutines of this process, which share the file's lock)
// and flock(2) on the file (the other processes), so that of several
// replicas that read a nonce's slot only one finds it there.
type nonceTable struct {
	mu sync.Mutex
	f  *os.File
}

// nonceLocation returns a nonce's slot offset in the table and its check.
func nonceLocation(nonce string) (off int64, check [nonceCheckN]byte) {
	off = int64(store.NonceSerial(nonce)%nonceSlots) * nonceSlot
	sum := sha256.Sum256([]byte(nonce))
	copy(check[:], sum[:nonceCheckN])
	return off, check
}

// nonceFile returns the open table, creating it on first use.
func (s *Store) nonceFile() (*os.File, error) {
	s.nonceTab.mu.Lock()
	defer s.nonceTab.mu.Unlock()
	if s.nonceTab.f != nil {
		return s.nonceTab.f, nil
	}
	if err := s.dir.MkdirAll(ACMEDir); err != nil {
		return nil, fmt.Errorf("creating %q: %w", s.dir.Join(ACMEDir), err)
	}
	f, err := regfile.Open(func(flag int) (*os.File, error) {
		return s.dir.Root().OpenFile(NonceTable, flag|os.O_RDWR|os.O_CREATE, 0o600)
	})
	if err != nil {
		return nil, fmt.Errorf("opening the nonce table %q: %w", s.dir.Join(NonceTable), err)
	}
	s.nonceTab.f = f
	return f, nil
}

// closeNonces closes the table, if open.
func (s *Store) closeNonces() {
	s.nonceTab.mu.Lock()
	defer s.nonceTab.mu.Unlock()
	if s.nonceTab.f != nil {
		s.nonceTab.f.Close()
		s.nonceTab.f = nil
	}
}

// AddNonce writes the nonce into its slot, unsynced, before it is handed
// out. It takes no lock: a use that races it can only be of another nonce
// of the same slot, which the write replaces in any case.
func (s *Store) AddNonce(nonce string, expires time.Time) error {
	if !store.IsNonce(nonce) {
		return fmt.Errorf("invalid nonce %q", nonce)
	}
	f, err := s.nonceFile()
	if err != nil {
		return err
	}
	off, check := nonceLocation(nonce)
	var slot [nonceSlot]byte
	copy(slot[:], check[:])
	binary.BigEndian.PutUint64(slot[nonceCheckN:], uint64(expires.Unix()))
	if _, err := f.WriteAt(slot[:], off); err != nil {
		return fmt.Errorf("adding a nonce to %q: %w", s.dir.Join(NonceTable), err)
	}
	return nil
}

// UseNonce clears the nonce's slot if it holds the nonce, under the
// table's locks: it reports true once for a nonce added and not expired
// at now, false for an unknown, used, replaced or expired one.
func (s *Store) UseNonce(nonce string, now time.Time) (bool, error) {
	if !store.IsNonce(nonce) {
		return false, nil
	}
	f, err := s.nonceFile()
	if err != nil {
		return false, err
	}
	off, check := nonceLocation(nonce)
	s.nonceTab.mu.Lock()
	defer s.nonceTab.mu.Unlock()
	if err := flock.Lock(f); err != nil {
		return false, fmt.Errorf("locking the nonce table %q: %w", s.dir.Join(NonceTable), err)
	}
	defer flock.Unlock(f)
	var slot [nonceSlot]byte
	n, err := f.ReadAt(slot[:], off)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("reading the nonce table %q: %w", s.dir.Join(NonceTable), err)
	}
	if n < len(slot) { // past the end: never written
		return false, nil
	}
	if [nonceCheckN]byte(slot[:nonceCheckN]) != check {
		return false, nil
	}
	if _, err := f.WriteAt(make([]byte, nonceSlot), off); err != nil {
		return false, fmt.Errorf("using a nonce of %q: %w", s.dir.Join(NonceTable), err)
	}
	return now.Unix() < int64(binary.BigEndian.Uint64(slot[nonceCheckN:])), nil
}
