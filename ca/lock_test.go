package ca

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestLockExclusive: a second handle on the same directory waits, then fails
// naming the holder's pid; once the holder lets go it gets the lock. The
// same holds on every platform (flock, or LockFileEx on Windows).
func TestLockExclusive(t *testing.T) {
	first, _ := newTestCA(t, InitOptions{})
	second, err := Open(first.Dir().Path())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	unlock, err := first.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = second.Lock(50 * time.Millisecond)
	var le *LockError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock() error = %v; want a *LockError matching ErrLocked", err)
	}
	if le.PID != os.Getpid() {
		t.Errorf("LockError.PID = %d; want the holder's pid %d", le.PID, os.Getpid())
	}
	unlock()
	unlock2, err := second.Lock(time.Second)
	if err != nil {
		t.Fatalf("Lock() after the holder let go: %v", err)
	}
	unlock2()
}
