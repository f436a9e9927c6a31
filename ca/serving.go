package ca

import (
	"errors"
	"fmt"
	"minica/ca/store"
	"minica/internal/flock"
	"os"
	"strconv"
)

// A running `minica serve` keeps its store open for as long as it runs
// and records what it signs there. A switch of the CA's store (MoveStore,
// `store copy --use`) under it would split the database: serve goes on
// writing to the old store, and list, report and check of the new one miss
// what it did. So every serve registers (HoldServing) and a switch is
// refused while one is registered:
//
//   - in the CA directory: serve.lock, held with a shared flock(2) by
//     every serve of the directory, whatever its store; a switch takes it
//     exclusive;
//   - in a PostgreSQL store: the advisory lock (pg.LockClass, pg.LockServe),
//     held shared on a connection of its own by every serve replica of the
//     store, on any host; a switch away from the store takes it exclusive.
//
// The operating system and PostgreSQL release both when the holder dies.

// serveLockFile is the CA directory's registration of its serves.
const serveLockFile = "serve.lock"

// ErrServeRunning is matched by *ServeRunningError.
var ErrServeRunning = store.ErrServeRunning

// ErrStoreSwitched is returned by HoldServing when the CA's store is being
// switched, or was switched after the handle was opened: a serve started
// then would serve the old store.
var ErrStoreSwitched = store.ErrStoreSwitched

// ServeRunningError is returned by MoveStore while a serve of the CA runs;
// it says where it is registered. It matches ErrServeRunning.
type ServeRunningError = store.ServeRunningError

// HoldServing registers the handle as a running serve of the CA, in its
// directory and, on PostgreSQL, in its store, until Close; while it holds,
// MoveStore is refused. It fails with ErrStoreSwitched while a switch is
// under way, or when the settings name another store than when the handle
// was opened. Called again, it takes back what was lost (a PostgreSQL
// session that ended): serve calls it at every round.
func (c *CA) HoldServing() error {
	if c.serving == nil {
		f, err := c.dir.Root().OpenFile(serveLockFile, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("opening %q: %w", c.dir.Join(serveLockFile), err)
		}
		err = flock.TryLockShared(f)
		if errors.Is(err, flock.ErrWouldBlock) {
			err = fmt.Errorf("%w: minica store copy --use holds %q", ErrStoreSwitched, c.dir.Join(serveLockFile))
		}
		if err == nil {
			err = c.sameSettingsStore()
		}
		if err != nil {
			f.Close()
			return err
		}
		c.serving = f
	}
	retaken, err := c.db.HoldServing()
	if err != nil {
		return err
	}
	if retaken {
		// A switch may have run while the session was gone.
		return c.sameSettingsStore()
	}
	return nil
}

// sameSettingsStore fails with ErrStoreSwitched when the settings on disk
// name another store than when the handle read them.
func (c *CA) sameSettingsStore() error {
	data, err := c.dir.ReadFile(settingsFile)
	if err != nil {
		return fmt.Errorf("reading CA settings %q: %w", c.dir.Join(settingsFile), err)
	}
	now, err := parseSettings(data)
	if err != nil {
		return fmt.Errorf("corrupt CA settings %q: %w", c.dir.Join(settingsFile), err)
	}
	if now.Store != c.Settings.Store {
		return fmt.Errorf("%w: the settings %q name the store %s, not the one this process opened (%s)",
			ErrStoreSwitched, c.dir.Join(settingsFile), storeName(now.Store), storeName(c.Settings.Store))
	}
	return nil
}

func storeName(s string) string {
	if s == "" {
		return StoreFile
	}
	return strconv.Quote(s)
}

// releaseServing ends the handle's registration in its directory.
func (c *CA) releaseServing() {
	if c.serving != nil {
		flock.Unlock(c.serving)
		c.serving.Close()
		c.serving = nil
	}
}

// MoveStore copies the database to the store to (see CopyStore) and
// records to in the CA settings (SetStore). It refuses with a
// ServeRunningError, before anything is copied, while a serve of the CA
// runs on this directory or on the store in use, and no serve starts
// until it returns. The caller holds the lock (see Lock).
func (c *CA) MoveStore(to string) (*CopyResult, error) {
	release, err := c.excludeServing()
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := c.CopyStore(to)
	if err != nil {
		return nil, err
	}
	if err := c.SetStore(to); err != nil {
		return res, fmt.Errorf("copied, but recording the store: %w", err)
	}
	return res, nil
}

// excludeServing takes what every serve holds shared exclusively, without
// waiting: the directory's serve.lock and what the store has of its own
// (on PostgreSQL, pg.LockServe).
func (c *CA) excludeServing() (release func(), err error) {
	f, err := c.dir.Root().OpenFile(serveLockFile, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %q: %w", c.dir.Join(serveLockFile), err)
	}
	if err := flock.TryLock(f); err != nil {
		f.Close()
		if errors.Is(err, flock.ErrWouldBlock) {
			return nil, &ServeRunningError{Where: fmt.Sprintf("the CA directory %q", c.dir.Path())}
		}
		return nil, fmt.Errorf("locking %q: %w", c.dir.Join(serveLockFile), err)
	}
	unlock := func() {
		flock.Unlock(f)
		f.Close()
	}
	end, err := c.db.ExcludeServing()
	if err != nil {
		unlock()
		return nil, err
	}
	return func() { end(); unlock() }, nil
}
