//go:build unix

package flock

import (
	"errors"
	"os"
	"syscall"
)

// TryLock takes an exclusive flock(2) on f without waiting.
func TryLock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrWouldBlock
	}
	return err
}

// TryLockShared takes a shared flock(2) on f without waiting.
func TryLockShared(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrWouldBlock
	}
	return err
}

// Unlock releases the lock TryLock or TryLockShared took on f.
func Unlock(f *os.File) {
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// Lock takes an exclusive flock(2) on f, waiting for it (Go's signal
// handlers restart the call).
func Lock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
}
