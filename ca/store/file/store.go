package file

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"minica/ca/store"
	"minica/internal/cadir"
	"minica/internal/flock"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Files of the file store, relative to the CA directory (see also
// RecordPath, NameIndexDir, RevocationLog and EnrollDir).
const (
	// LockFile is what Lock takes flock(2) on; it holds the holder's pid.
	LockFile = "lock"
	// CRLNumberFile holds the last CRL number reserved, in decimal.
	CRLNumberFile = store.CRLNumberFile
)

// Store is the file engine: the issuance database kept in the CA
// directory's own files. Its invariants:
//
//   - a serial is reserved by creating its record file with O_EXCL before
//     the certificate is signed, and indexed under its name (db/names)
//     before the certificate exists;
//   - a revocation is appended to db/revoked.log and synced before the
//     record changes, and an append lands whole or not at all;
//   - the CRL number is written (crlnumber) before the CRL is signed, and
//     the current CRL is the published copy itself: crl.pem, then crl.der;
//   - the current delta CRL, its number with it, is db/crl-delta, written
//     before its published copy: crl-delta.pem, then crl-delta.der;
//   - every mutation holds flock(2) on the file "lock".
//
// What a crash leaves is repaired by the CA's check, through Repair,
// Reindex, DropUnreadable and CheckCRL.
type Store struct {
	dir *cadir.Dir
	// cert is the CA certificate, which the published CRL's number is
	// verified against.
	cert    *x509.Certificate
	wrapLog func(LogFile) LogFile   // see Options
	crashed func(file string) error // see Options
	// indexMu makes one of concurrent reservations rebuild a missing
	// name index.
	indexMu sync.Mutex
	// acme holds the open directories of db/acme (see acmeSub), and
	// nonceTab the open nonce table (see nonceFile).
	acme     acmeDirs
	nonceTab nonceTable
}

// Options are the hooks of a file store, for tests.
type Options struct {
	// WrapLog, when set, wraps the revocation log for appends: tests
	// inject failing writes through it.
	WrapLog func(LogFile) LogFile
	// Crashed, when set, is called after each file of a CRL is written;
	// an error stops SaveCRL there, as a kill would.
	Crashed func(file string) error
}

// New returns the file store of the CA directory dir, whose CA
// certificate is cert.
func New(dir *cadir.Dir, cert *x509.Certificate, o Options) *Store {
	return &Store{dir: dir, cert: cert, wrapLog: o.WrapLog, crashed: o.Crashed}
}

// Create lays out an empty file store in a new CA directory d:
// every CA directory has one, which holds the first CRL whatever store
// the CA then uses.
func Create(d *cadir.Dir) error {
	for _, sub := range []string{"db", NameIndexDir} {
		if err := d.MkdirAll(sub); err != nil {
			return err
		}
	}
	return nil
}

// String is the CA directory's path.
func (s *Store) String() string { return s.dir.Path() }

// Close releases nothing: the CA handle owns the directory.
func (s *Store) Close() error {
	s.closeACME()
	s.closeNonces()
	return nil
}

// Lock takes the exclusive lock on the CA directory, waiting at most timeout
// for another holder to let go. The lock is an flock(2) on the file "lock"
// (LockFileEx on Windows), so the operating system releases it when its
// holder dies, even by SIGKILL. The returned function releases it.
func (s *Store) Lock(timeout time.Duration) (unlock func(), err error) {
	f, err := s.dir.Root().OpenFile(LockFile, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file %q: %w", s.dir.Join(LockFile), err)
	}
	deadline := time.Now().Add(timeout)
	for {
		err = flock.TryLock(f)
		if err == nil {
			break
		}
		if !errors.Is(err, flock.ErrWouldBlock) {
			f.Close()
			return nil, fmt.Errorf("locking %q: %w", s.dir.Join(LockFile), err)
		}
		if !time.Now().Before(deadline) {
			pid := readPID(f)
			f.Close()
			return nil, &store.LockError{Path: s.dir.Join(LockFile), PID: pid}
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The pid is informational: it names the holder in other processes'
	// errors. It is not needed for correctness, so failures are ignored.
	// Written at a fixed width, it always overwrites the previous one
	// whole, so that taking the lock needs no truncate: every mutation
	// takes the lock, and a truncate is a metadata change of its own.
	f.WriteAt(fmt.Appendf(nil, "%-10d\n", os.Getpid()), 0)
	return func() {
		flock.Unlock(f)
		f.Close()
	}, nil
}

func readPID(f *os.File) int {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	return pid
}

// The processes of a file store share one host and its CA directory:
// every one may sign the CRL, one at a time under the lock; readers are
// notified where inotify is (notify_linux.go) and poll the files besides;
// serves register in the directory's serve.lock, which the CA
// holds for every store.

func (s *Store) HoldCRLSigner() (bool, error)    { return true, nil }
func (s *Store) ReleaseCRLSigner()               {}
func (s *Store) HoldServing() (bool, error)      { return false, nil }
func (s *Store) ExcludeServing() (func(), error) { return func() {}, nil }

// Ping is always nil: the CA handle holds the directory open.
func (s *Store) Ping() error { return nil }

// crash calls the test hook crashed, if set, after file was written.
func (s *Store) crash(file string) error {
	if s.crashed == nil {
		return nil
	}
	return s.crashed(file)
}

// RaiseCRLNumber does nothing: the file store's next number is raised
// above the published CRL's when it is reserved (see NextCRLNumber).
func (s *Store) RaiseCRLNumber(*big.Int) (bool, error) { return false, nil }

// AdoptPublishedCRL does nothing: the published copy is the file store's
// current CRL.
func (s *Store) AdoptPublishedCRL() error { return nil }

// PublishedCopies is empty: the published copy is the database.
func (s *Store) PublishedCopies() []store.CRLCopy { return nil }

// Repair removes the temporary files that interrupted writes left in db/,
// in the record shards and in the ACME directories, reports what else is
// in db/, and repairs the revocation log (see repairRevlog).
func (s *Store) Repair(fixed, problem func(string)) error {
	if err := s.dir.RemoveTemps("db"); err != nil {
		return err
	}
	shards, err := fs.ReadDir(s.dir.Root().FS(), "db")
	if err != nil {
		return fmt.Errorf("listing %q: %w", s.dir.Join("db"), err)
	}
	for _, e := range shards {
		switch e.Name() {
		case path.Base(RevocationLog), path.Base(NameIndexDir), path.Base(DeltaCRLFile):
			continue
		}
		if !e.IsDir() {
			problem(fmt.Sprintf("unexpected file %q in the database", s.dir.Join(path.Join("db", e.Name()))))
			continue
		}
		if e.Name() == path.Base(ACMEDir) {
			err = s.removeACMETemps()
		} else {
			err = s.dir.RemoveTemps(path.Join("db", e.Name()))
		}
		if err != nil {
			return err
		}
	}
	return s.repairRevlog(fixed, problem)
}

// DropUnreadable removes the file of an unreadable record that no
// certificate file can rebuild: what a power loss can make of a
// store.Reservation whose certificate was never written.
func (s *Store) DropUnreadable(corrupt *store.CorruptRecordError, fixed, problem func(string)) error {
	file := RecordPath(corrupt.Serial)
	if err := s.dir.Root().Remove(file); err != nil {
		return fmt.Errorf("removing %q: %w", s.dir.Join(file), err)
	}
	fixed(fmt.Sprintf("removed the unreadable record %q: no certificate with serial %s exists", s.dir.Join(file), corrupt.Serial))
	return nil
}
