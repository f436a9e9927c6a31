package ca

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrLocked is returned by CA.Lock when another process holds the CA lock
// for longer than the timeout.
var ErrLocked = errors.New("directory is locked by another minica process")

// LockError tells which process holds the lock.
type LockError struct {
	Path string // the lock file
	PID  int    // the holder's pid, 0 when unknown
}

func (e *LockError) Error() string {
	if IsPostgresStore(e.Path) {
		if e.PID == 0 {
			return fmt.Sprintf("CA %s (the advisory lock of the store %q)", ErrLocked, e.Path)
		}
		return fmt.Sprintf("CA %s (pid %d, the advisory lock of the store %q)", ErrLocked, e.PID, e.Path)
	}
	if e.PID == 0 {
		return fmt.Sprintf("CA %s (lock file %q)", ErrLocked, e.Path)
	}
	return fmt.Sprintf("CA %s (pid %d, lock file %q)", ErrLocked, e.PID, e.Path)
}

// Unwrap makes errors.Is(err, ErrLocked) true.
func (e *LockError) Unwrap() error { return ErrLocked }

const lockFile = "lock"

// errWouldBlock is what tryLock returns when another holder has the lock.
var errWouldBlock = errors.New("lock held elsewhere")

// Lock takes the exclusive lock on the CA directory, waiting at most timeout
// for another holder to let go. The lock is an flock(2) on the file "lock"
// (LockFileEx on Windows), so the operating system releases it when its
// holder dies, even by SIGKILL. The returned function releases it.
func (c *CA) Lock(timeout time.Duration) (unlock func(), err error) {
	if c.db != nil {
		return c.db.lock(timeout)
	}
	f, err := c.dir.root.OpenFile(lockFile, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file %q: %w", c.dir.Join(lockFile), err)
	}
	deadline := time.Now().Add(timeout)
	for {
		err = tryLock(f)
		if err == nil {
			break
		}
		if !errors.Is(err, errWouldBlock) {
			f.Close()
			return nil, fmt.Errorf("locking %q: %w", c.dir.Join(lockFile), err)
		}
		if !time.Now().Before(deadline) {
			pid := readPID(f)
			f.Close()
			return nil, &LockError{Path: c.dir.Join(lockFile), PID: pid}
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
		unlockFile(f)
		f.Close()
	}, nil
}

func readPID(f *os.File) int {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	return pid
}
