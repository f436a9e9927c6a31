//go:build interop

package ca

import (
	"errors"
	"testing"

	"minica/ca/store/pg"
)

// A serve whose registration session ended, and whose first try to take
// it back failed (a switch held the store then), must still check the
// settings when a later try succeeds: the switch may have moved the CA
// away in between. HoldServing refuses it with ErrStoreSwitched.
func TestPGServingRetakenAfterFailedTry(t *testing.T) {
	c, _, url := newPGCA(t)
	serving, err := OpenWith(c.Dir().Path(), OpenOptions{Engines: testEngines})
	if err != nil {
		t.Fatal(err)
	}
	defer serving.Close()
	if err := serving.HoldServing(); err != nil {
		t.Fatalf("HoldServing: %v", err)
	}
	killBackend(t, url, servingSessionPID(t, url))

	// A switch holds the store while the serve tries again.
	release, err := c.db.(*pg.Store).ExcludeServing()
	if err != nil {
		t.Fatalf("ExcludeServing once the serve's session ended: %v", err)
	}
	if err := serving.HoldServing(); !errors.Is(err, ErrStoreSwitched) {
		t.Fatalf("HoldServing during the switch = %v; want ErrStoreSwitched", err)
	}
	if err := c.SetStore(nowhere); err != nil { // what the switch records last
		t.Fatal(err)
	}
	release()
	if err := serving.HoldServing(); !errors.Is(err, ErrStoreSwitched) {
		t.Fatalf("HoldServing after the switch = %v; want ErrStoreSwitched", err)
	}
}

// servingSessionPID is the backend pid of the session that holds a
// serve's registration (LockServe) in the database at url.
func servingSessionPID(t *testing.T, url string) int32 {
	t.Helper()
	return int32(pgQueryInt(t, url, `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND classid = $1 AND objid = $2 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
		uint32(pg.LockClass), uint32(pg.LockServe)))
}
