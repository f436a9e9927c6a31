// Package flock takes advisory locks on open files, without waiting
// (TryLock, TryLockShared) or waiting (Lock):
// flock(2) on Unix, LockFileEx on Windows. The operating system releases a
// lock when its holder's file is closed, which includes the holder's
// death, even by SIGKILL.
package flock

import "errors"

// ErrWouldBlock is returned by TryLock and TryLockShared when another
// holder has the lock.
var ErrWouldBlock = errors.New("lock held elsewhere")
