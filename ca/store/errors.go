package store

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrNotFound is returned when no record matches a name or serial.
var ErrNotFound = errors.New("no such certificate")

// ErrEnrollmentUnknown: no enrollment has this token (or ID or name).
var ErrEnrollmentUnknown = errors.New("no such enrollment")

// ErrLocked is returned by Lock when another process holds the CA lock
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

// ErrStoreLockLost is returned by a write of a holder of the CA lock on
// PostgreSQL whose lock the server freed (its session ended). The write
// and every later one of the holder fail, so nothing more is written.
// It is never retried.
var ErrStoreLockLost = errors.New("the CA lock of the store was lost")

// ErrStoreNotEmpty is returned by Load for a target that holds records,
// revocations or enrollments already: a copy never merges two databases.
var ErrStoreNotEmpty = errors.New("the target store is not empty")

// ErrForeignStore is returned when the database holds another CA's records.
var ErrForeignStore = errors.New("the store belongs to another CA")

// ErrServeRunning is matched by *ServeRunningError.
var ErrServeRunning = errors.New("a minica serve of this CA is running")

// ErrStoreSwitched is returned by HoldServing when the CA's store is being
// switched, or was switched after the handle was opened: a serve started
// then would serve the old store.
var ErrStoreSwitched = errors.New("the CA's store is being switched or was switched")

// ServeRunningError is returned by MoveStore while a serve of the CA runs;
// it says where it is registered. It matches ErrServeRunning.
type ServeRunningError struct {
	Where string // the CA directory "...", or the store "..."
	PIDs  []int  // of the serves, when the store knows them
}

func (e *ServeRunningError) Error() string {
	s := fmt.Sprintf("%v (on %s", ErrServeRunning, e.Where)
	switch len(e.PIDs) {
	case 0:
	case 1:
		s += fmt.Sprintf(", pid %d", e.PIDs[0])
	default:
		pids := make([]string, len(e.PIDs))
		for i, p := range e.PIDs {
			pids[i] = strconv.Itoa(p)
		}
		s += ", pids " + strings.Join(pids, ", ")
	}
	return s + ")"
}

// Unwrap makes errors.Is(err, ErrServeRunning) true.
func (e *ServeRunningError) Unwrap() error { return ErrServeRunning }
