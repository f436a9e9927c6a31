package ca

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"minica/internal/flock"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fileStore is the file engine: the issuance database kept in the CA
// directory's own files (see the package documentation for the layout).
// Its invariants:
//
//   - a serial is reserved by creating its record file with O_EXCL before
//     the certificate is signed, and indexed under its name (db/names)
//     before the certificate exists;
//   - a revocation is appended to db/revoked.log and synced before the
//     record changes, and an append lands whole or not at all;
//   - the CRL number is written (crlnumber) before the CRL is signed, and
//     the current CRL is the published copy itself: crl.pem, then crl.der;
//   - every mutation holds flock(2) on the file "lock".
//
// What a crash leaves is repaired by Check, through Repair, Reindex,
// DropUnreadable and CheckCRL.
type fileStore struct {
	dir *Dir
	// cert is the CA certificate, which the published CRL's number is
	// verified against.
	cert *x509.Certificate
	// wrapLog, when set, wraps the revocation log for appends (tests).
	wrapLog func(logFile) logFile
	// crashed, when set, is called after each file of a CRL is written;
	// an error stops SaveCRL there, as a kill would (tests).
	crashed func(file string) error
	// indexMu makes one of concurrent reservations rebuild a missing
	// name index.
	indexMu sync.Mutex
}

// newFileStore returns the file engine of the CA directory dir.
func newFileStore(dir *Dir, cert *x509.Certificate) *fileStore {
	return &fileStore{dir: dir, cert: cert}
}

// makeFileStore lays out an empty file store in a new CA directory d:
// every CA directory has one, which holds the first CRL whatever store
// the CA then uses.
func makeFileStore(d *Dir) error {
	for _, sub := range []string{"db", nameIndexDir} {
		if err := d.MkdirAll(sub); err != nil {
			return err
		}
	}
	return nil
}

func (s *fileStore) String() string { return s.dir.Path() }

// Close releases nothing: the CA handle owns the directory.
func (s *fileStore) Close() error { return nil }

// Lock takes the exclusive lock on the CA directory, waiting at most timeout
// for another holder to let go. The lock is an flock(2) on the file "lock"
// (LockFileEx on Windows), so the operating system releases it when its
// holder dies, even by SIGKILL. The returned function releases it.
func (s *fileStore) Lock(timeout time.Duration) (unlock func(), err error) {
	f, err := s.dir.Root().OpenFile(lockFile, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file %q: %w", s.dir.Join(lockFile), err)
	}
	deadline := time.Now().Add(timeout)
	for {
		err = flock.TryLock(f)
		if err == nil {
			break
		}
		if !errors.Is(err, flock.ErrWouldBlock) {
			f.Close()
			return nil, fmt.Errorf("locking %q: %w", s.dir.Join(lockFile), err)
		}
		if !time.Now().Before(deadline) {
			pid := readPID(f)
			f.Close()
			return nil, &LockError{Path: s.dir.Join(lockFile), PID: pid}
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The pid is informational: it names the holder in other processes'
	// errors. It is not needed for correctness, so failures are ignored.
	// Written at a fixed width, it always overwrites the previous one
	// whole: truncating the file first cost a fifth of a millisecond.
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
// every one may sign the CRL, one at a time under the lock; readers poll
// the files; serves register in the directory's serve.lock, which the CA
// holds for every store.

func (s *fileStore) HoldCRLSigner() (bool, error)                         { return true, nil }
func (s *fileStore) ReleaseCRLSigner()                                    {}
func (s *fileStore) CRLNotifications(ctx context.Context) <-chan struct{} { return nil }
func (s *fileStore) HoldServing() (bool, error)                           { return false, nil }
func (s *fileStore) ExcludeServing() (func(), error)                      { return func() {}, nil }

// Ping is always nil: the CA handle holds the directory open.
func (s *fileStore) Ping() error { return nil }

// crash calls the test hook crashed, if set, after file was written.
func (s *fileStore) crash(file string) error {
	if s.crashed == nil {
		return nil
	}
	return s.crashed(file)
}

// RaiseCRLNumber does nothing: the file store's next number is raised
// above the published CRL's when it is reserved (see NextCRLNumber).
func (s *fileStore) RaiseCRLNumber(*big.Int) (bool, error) { return false, nil }

// AdoptPublishedCRL does nothing: the published copy is the file store's
// current CRL.
func (s *fileStore) AdoptPublishedCRL() error { return nil }

// PublishedCopies is empty: the published copy is the database.
func (s *fileStore) PublishedCopies() []crlCopy { return nil }

// Repair removes the temporary files that interrupted writes left in the
// record shards, reports what else is in db/, and repairs the revocation
// log (see repairRevlog).
func (s *fileStore) Repair(fixed, problem func(string)) error {
	shards, err := fs.ReadDir(s.dir.Root().FS(), "db")
	if err != nil {
		return fmt.Errorf("listing %q: %w", s.dir.Join("db"), err)
	}
	for _, e := range shards {
		if e.Name() == path.Base(revlogFile) || e.Name() == path.Base(nameIndexDir) {
			continue
		}
		if !e.IsDir() {
			problem(fmt.Sprintf("unexpected file %q in the database", s.dir.Join(path.Join("db", e.Name()))))
			continue
		}
		if err := removeTemps(s.dir, path.Join("db", e.Name())); err != nil {
			return err
		}
	}
	return s.repairRevlog(fixed, problem)
}

// DropUnreadable removes the file of an unreadable record that no
// certificate file can rebuild: what a power loss can make of a
// reservation whose certificate was never written.
func (s *fileStore) DropUnreadable(corrupt *CorruptRecordError, fixed, problem func(string)) error {
	file := recordPath(corrupt.Serial)
	if err := s.dir.Root().Remove(file); err != nil {
		return fmt.Errorf("removing %q: %w", s.dir.Join(file), err)
	}
	fixed(fmt.Sprintf("removed the unreadable record %q: no certificate with serial %s exists", s.dir.Join(file), corrupt.Serial))
	return nil
}
