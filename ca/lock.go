package ca

import (
	"minica/ca/store"
	"time"
)

// ErrLocked is returned by CA.Lock when another process holds the CA lock
// for longer than the timeout.
var ErrLocked = store.ErrLocked

// ErrStoreLockLost is returned by a write of a holder of the CA lock whose
// lock was freed without it knowing (on PostgreSQL, its session ended).
var ErrStoreLockLost = store.ErrStoreLockLost

// LockError tells which process holds the lock.
type LockError = store.LockError

// flock.ErrWouldBlock is what tryLock returns when another holder has the lock.

// Lock takes the exclusive lock that every mutation holds, waiting at most
// timeout for another holder to let go: in the file store an flock(2) on
// the file "lock" (LockFileEx on Windows), on PostgreSQL an advisory lock;
// the operating system or the server releases it when its holder dies,
// even by SIGKILL. The returned function releases it.
func (c *CA) Lock(timeout time.Duration) (unlock func(), err error) {
	return c.db.Lock(timeout)
}
