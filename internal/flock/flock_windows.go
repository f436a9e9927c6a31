//go:build windows

package flock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockOffset is where the locked byte lies. Windows locks are mandatory:
// a locked range cannot be read by other processes, so the lock lies past
// the holder's pid at the start of the file, which they read for the error.
const lockOffset = 1 << 30

// TryLock takes an exclusive LockFileEx lock on one byte of f without
// waiting. Windows releases it when the holder's handle closes, which
// includes the holder's death.
func TryLock(f *os.File) error {
	ol := windows.Overlapped{Offset: lockOffset}
	err := windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return ErrWouldBlock
	}
	return err
}

// Lock takes the exclusive LockFileEx lock of TryLock on f, waiting for
// it.
func Lock(f *os.File) error {
	ol := windows.Overlapped{Offset: lockOffset}
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, &ol)
}

// TryLockShared takes a shared LockFileEx lock on the byte of TryLock
// without waiting.
func TryLockShared(f *os.File) error {
	ol := windows.Overlapped{Offset: lockOffset}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return ErrWouldBlock
	}
	return err
}

// Unlock releases the lock TryLock or TryLockShared took on f.
func Unlock(f *os.File) {
	ol := windows.Overlapped{Offset: lockOffset}
	windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
