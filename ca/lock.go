package ca

import (
	"errors"
	"fmt"
	"time"
)

// ErrLocked is returned by CA.Lock when another process holds the CA lock
// for longer than the timeout.
var ErrLocked = errors.New("directory is locked by another minica process")

// LockError tells which process holds the lock.
type LockError struct {
	Path string // the lock file, or the store's URL
	PID  int    // the holder's pid, 0 when unknown
	// Lock names the lock in messages; "" for the lock file Path.
	Lock string
}

func (e *LockError) Error() string {
	lock := e.Lock
	if lock == "" {
		lock = fmt.Sprintf("lock file %q", e.Path)
	}
	if e.PID == 0 {
		return fmt.Sprintf("CA %s (%s)", ErrLocked, lock)
	}
	return fmt.Sprintf("CA %s (pid %d, %s)", ErrLocked, e.PID, lock)
}

// Unwrap makes errors.Is(err, ErrLocked) true.
func (e *LockError) Unwrap() error { return ErrLocked }

const lockFile = "lock"

// flock.ErrWouldBlock is what tryLock returns when another holder has the lock.

// Lock takes the exclusive lock that every mutation holds, waiting at most
// timeout for another holder to let go: in the file store an flock(2) on
// the file "lock" (LockFileEx on Windows), on PostgreSQL an advisory lock;
// the operating system or the server releases it when its holder dies,
// even by SIGKILL. The returned function releases it.
func (c *CA) Lock(timeout time.Duration) (unlock func(), err error) {
	return c.db.Lock(timeout)
}
