//go:build interop

package ca

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"minica/ca/store/pg"
	"minica/internal/pgtest"
)

// The CA lock's session ends while its holder runs a batch (terminated by
// an operator, or PostgreSQL restarted): the batch fails with
// ErrStoreLockLost and a message saying what to do, is not retried, and
// writes nothing more (a later write of the handle fails without asking
// the server); the next holder's Check leaves nothing to repair, and
// issuing the names left completes the batch with one valid record each.
func TestPGLockLostDuringBatch(t *testing.T) {
	tests := []struct {
		name  string
		fault func(t *testing.T, srv *pgtest.Server, url string, s *pg.Store)
	}{
		{name: "pg_terminate_backend of the lock's session", fault: func(t *testing.T, _ *pgtest.Server, url string, s *pg.Store) {
			killBackend(t, url, s.LockSessionPID())
		}},
		{name: "PostgreSQL restarted", fault: func(t *testing.T, srv *pgtest.Server, _ string, _ *pg.Store) {
			if err := srv.Restart(); err != nil {
				t.Error(err)
			}
		}},
	}
	srv := pgtest.Own(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, err := srv.CreateDatabase()
			if err != nil {
				t.Fatal(err)
			}
			c, signer := newTestCA(t, InitOptions{Store: url})
			unlock, err := c.Lock(time.Second)
			if err != nil {
				t.Fatal(err)
			}
			s := c.db.(*pg.Store)
			// Groups of 4: the fault comes in the third write, the
			// reservation of the second group.
			var writes atomic.Int64
			s.SetBeforeCommit(func(context.Context, pgx.Tx, int) error {
				if writes.Add(1) == 3 {
					tt.fault(t, srv, url, s)
				}
				return nil
			})
			reqs := clientRequests("u", 12)
			reported := map[string]bool{}
			n, err := c.IssueBatch(signer, slices.Values(reqs), BatchOptions{GroupSize: 4}, func(r BatchResult) error {
				reported[r.Request.Name] = true
				return nil
			})
			if !errors.Is(err, ErrStoreLockLost) || !strings.Contains(err.Error(), "wrote nothing more") {
				t.Fatalf("IssueBatch = %d, %v; want ErrStoreLockLost saying nothing more was written", n, err)
			}
			if n != 4 || len(reported) != 4 {
				t.Errorf("IssueBatch reported %d (%v); want the first group's 4", n, reported)
			}
			if got := s.Retries(); got != 0 {
				t.Errorf("%d retries; want none: a lost lock is not retried", got)
			}
			before := writes.Load()
			if err := s.PutRecord(&Record{Serial: strings.Repeat("ab", 16), Name: "late"}); !errors.Is(err, ErrStoreLockLost) {
				t.Errorf("a write after the loss: %v; want ErrStoreLockLost", err)
			}
			if writes.Load() != before {
				t.Errorf("a write after the loss reached the server")
			}
			s.SetBeforeCommit(nil)
			unlock()

			// The next command: a new handle, as a re-run is.
			c2, err := openTest(c.dir.Path())
			if err != nil {
				t.Fatal(err)
			}
			defer c2.Close()
			unlock2, err := c2.Lock(5 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer unlock2()
			rep, err := c2.Check()
			if err != nil || len(realProblems(rep)) != 0 {
				t.Fatalf("Check = %+v, %v; want no problems", rep, err)
			}
			var missing []Request
			for _, r := range reqs {
				recs, err := c2.RecordsByName(r.Name)
				if err != nil {
					t.Fatal(err)
				}
				if len(recs) == 0 {
					missing = append(missing, r)
				}
			}
			if _, err := c2.IssueBatch(signer, slices.Values(missing), BatchOptions{GroupSize: 4}, func(BatchResult) error { return nil }); err != nil {
				t.Fatalf("issuing the %d names left: %v", len(missing), err)
			}
			for _, r := range reqs {
				recs, _ := c2.RecordsByName(r.Name)
				if len(recs) != 1 || recs[0].Status != StatusValid {
					t.Errorf("%s has records %+v; want one valid", r.Name, recs)
					continue
				}
				if _, err := os.Stat(c2.dir.Join(recs[0].CertPath())); err != nil {
					t.Errorf("%s's certificate: %v", r.Name, err)
				}
			}
			if rep, err := c2.Check(); err != nil || len(rep.Repaired)+len(realProblems(rep)) != 0 {
				t.Errorf("Check after the re-run = %+v, %v; want nothing to repair", rep, err)
			}
		})
	}
}

// A second writer waiting for the lock gets it when the first one's
// session ends, but writes nothing before the first one's transaction in
// flight (which checked the lock before the session ended) has ended: what
// the second writer sees when it starts writing is all the first will
// ever have written.
func TestPGLockWaiterAfterLoss(t *testing.T) {
	a, signer, url := newPGCA(t)
	b, err := openTest(a.dir.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	unlockA, err := a.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlockA()
	sa, sb := a.db.(*pg.Store), b.db.(*pg.Store)
	aWrites := func() int {
		return pgQueryInt(t, url, "SELECT count(*) + count(*) FILTER (WHERE status = 'valid') FROM minica_records WHERE name LIKE 'a%'")
	}
	// seenByB is what of a's writes b saw when it first wrote.
	var seenByB atomic.Int64
	seenByB.Store(-1)
	bWriting := make(chan struct{})
	sb.SetBeforeCommit(func(context.Context, pgx.Tx, int) error {
		if seenByB.CompareAndSwap(-1, int64(aWrites())) {
			close(bWriting)
		}
		return nil
	})
	bDone := make(chan error, 1)
	go func() {
		unlock, err := b.Lock(30 * time.Second)
		if err != nil {
			bDone <- err
			return
		}
		defer unlock()
		_, err = b.IssueBatch(signer, slices.Values(clientRequests("b", 8)), BatchOptions{GroupSize: 4}, func(BatchResult) error { return nil })
		bDone <- err
	}()
	var writes atomic.Int64
	sa.SetBeforeCommit(func(context.Context, pgx.Tx, int) error {
		if writes.Add(1) != 3 {
			return nil
		}
		// The second group's reservation checked the lock; now its
		// session ends, and this transaction commits only once b has
		// the lock and is waiting (or, were it not waiting, writing).
		killBackend(t, url, sa.LockSessionPID())
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			select {
			case <-bWriting:
				return nil
			default:
			}
			if pgQueryInt(t, url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = $1 AND objid = $2",
				uint32(pg.LockClass), uint32(pg.LockWrites)) > 0 {
				return nil
			}
			if time.Now().After(deadline) {
				t.Error("b neither waited for a's write nor wrote in 20s")
				return nil
			}
		}
	})
	_, err = a.IssueBatch(signer, slices.Values(clientRequests("a", 12)), BatchOptions{GroupSize: 4}, func(BatchResult) error { return nil })
	if !errors.Is(err, ErrStoreLockLost) {
		t.Fatalf("a's batch: %v; want ErrStoreLockLost", err)
	}
	select {
	case err := <-bDone:
		if err != nil {
			t.Fatalf("b's batch: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("b's batch did not end in 60s")
	}
	// a wrote its first group (4 reservations, 4 completions) and the
	// second group's reservations (4); b saw all of them.
	final := aWrites()
	if got := seenByB.Load(); got != int64(final) || final != 12 {
		t.Errorf("b saw %d of a's writes when it started writing, a wrote %d in all; want 12 and 12", got, final)
	}
}
