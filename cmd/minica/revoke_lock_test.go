package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/ca"
)

// TestRevokeLockHeld: revoke and crl wait for the lock a bounded time, then
// fail naming the holder, with nothing changed.
func TestRevokeLockHeld(t *testing.T) {
	t.Parallel()
	dir := newCADir(t)
	mustMinica(t, dir, "issue", "client", "alice")
	authority, err := ca.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer authority.Close()
	unlock, err := authority.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	before := dirHash(t, dir)
	want := fmt.Sprintf("minica: error: CA directory is locked by another minica process (pid %d, lock file %q)", os.Getpid(), filepath.Join(dir, "lock"))
	for _, args := range [][]string{{"revoke", "alice", "--reason", "keyCompromise"}, {"crl"}} {
		_, stderr, code := minica(t, dir, append(args, "--lock-timeout", "200ms")...)
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("minica %v: exit %d, stderr %q; want 1 and %q", args, code, stderr, want)
		}
	}
	if dirHash(t, dir) != before {
		t.Error("the CA directory changed while the lock was held")
	}
	unlock()
	mustMinica(t, dir, "revoke", "alice", "--reason", "keyCompromise", "--lock-timeout", "200ms")
}
