package pg

import (
	"context"
	"errors"
	"fmt"
	"minica/ca/store"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The CA lock on PostgreSQL is a session advisory lock (LockClass,
// LockCA) held on one connection of the pool for as long as the caller
// holds it, while the writes go through the other connections. The server
// frees the lock when that session ends: a restart of PostgreSQL, a
// dropped connection, pg_terminate_backend. Its holder would not know, and
// would go on writing, unlocked, next to the writer that took the lock
// next. So every write transaction of a holder checks, inside the
// transaction and in the round trip of its first statement, that the
// session (its pid and start time: a pid is reused) still holds the lock,
// and fails with store.ErrStoreLockLost when it does not.
//
// The check and the commit are two moments: a session could end between
// them. LockWrites closes that gap: each checked transaction holds it
// shared from before its check to its end, and a new holder, once it has
// the CA lock, takes it exclusive once before it writes anything, which
// waits for a transaction still in flight from the holder before it.

// LockWrites is the advisory lock key (of class LockClass) that every
// write transaction of a holder of the CA lock holds shared, and that a
// new holder takes exclusive once after it got the CA lock.
const LockWrites int32 = 3

// lockSession is the session holding the CA lock for a handle.
type lockSession struct {
	pid   int32
	start time.Time // backend_start: a pid is reused, a start time is not
	lost  atomic.Bool

	mu   sync.Mutex
	conn *pgxpool.Conn // nil once unlocked
}

// lostError is the error of a write of the holder once the lock is lost.
func (ls *lockSession) lostError() error {
	return fmt.Errorf("%w: its session (backend pid %d) ended (PostgreSQL restarted, the connection dropped or pg_terminate_backend ended it) and another minica may hold the lock now, so this command wrote nothing more and stopped", store.ErrStoreLockLost, ls.pid)
}

// alive reports whether the lock's session still answers on its own
// connection; a session that answers holds its session-level lock.
func (ls *lockSession) alive() bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.conn == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	return ls.conn.Ping(ctx) == nil
}

// lockHeldSQL is true when the session pid started at $4 holds the
// CA lock of this database: pg_stat_get_activity(pid) reads one backend's
// entry, not all of them as pg_stat_activity would.
const lockHeldSQL = `SELECT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted
		AND l.pid = $1 AND l.classid = $2 AND l.objid = $3 AND l.objsubid = 2
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
	AND EXISTS (SELECT 1 FROM pg_stat_get_activity($1) a WHERE a.backend_start = $4)`

// Lock takes the advisory lock (LockClass, LockCA) on a connection of
// its own, polling as the lock file does; the holder's pid comes from its
// application_name. It remembers the session for the checks of the writes,
// and waits for the write transactions of a previous holder that lost the
// lock to end.
func (s *Store) Lock(timeout time.Duration) (func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout+opTimeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("locking the store %q: %w", s.url, err)
	}
	ls := &lockSession{conn: conn}
	deadline := time.Now().Add(timeout)
	for {
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2), pg_backend_pid(),
			(SELECT backend_start FROM pg_stat_get_activity(pg_backend_pid()))`, LockClass, LockCA).Scan(&ok, &ls.pid, &ls.start); err != nil {
			conn.Release()
			return nil, fmt.Errorf("locking the store %q: %w", s.url, err)
		}
		if ok {
			break
		}
		if !time.Now().Before(deadline) {
			pid := s.lockHolder(ctx, conn)
			conn.Release()
			return nil, &store.LockError{Path: s.url, PID: pid, Lock: fmt.Sprintf("the advisory lock of the store %q", s.url)}
		}
		time.Sleep(20 * time.Millisecond)
	}
	unlock := func() {
		s.held.CompareAndSwap(ls, nil)
		ls.mu.Lock()
		defer ls.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1, $2)", LockClass, LockCA); err != nil {
			// Closing the session releases the lock as surely.
			conn.Conn().Close(ctx)
		}
		conn.Release()
		ls.conn = nil
	}
	// A transaction-level lock taken outside a transaction is released
	// when the statement ends: this only waits for the shared holders.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_xact_lock($1, $2)", LockClass, LockWrites); err != nil {
		unlock()
		return nil, fmt.Errorf("locking the store %q: waiting for the writes of the previous holder: %w", s.url, err)
	}
	s.held.Store(ls)
	return unlock, nil
}

// lockHolder returns the pid of the minica process holding the lock, 0
// when unknown.
func (s *Store) lockHolder(ctx context.Context, conn *pgxpool.Conn) int {
	var app string
	conn.QueryRow(ctx, `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 2
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
		uint32(LockClass), uint32(LockCA)).Scan(&app)
	pid, _ := strconv.Atoi(strings.TrimPrefix(app, "minica/"))
	return pid
}

// lockLost turns the error of a write of the holder ls into the lock's
// loss when the lock is gone: the check said so, or the write failed and
// the lock's own connection no longer answers (a restart of the server
// ends every session at once). Once lost, ls stays lost.
func (ls *lockSession) lockLost(err error) error {
	if ls == nil || err == nil {
		return err
	}
	if errors.Is(err, store.ErrStoreLockLost) {
		ls.lost.Store(true)
		return err
	}
	if retryable(err) || ls.alive() {
		return err
	}
	ls.lost.Store(true)
	return fmt.Errorf("%w (the write failed: %v)", ls.lostError(), err)
}

// guardTx is a write transaction of a holder of the CA lock: its first
// statement goes in one round trip with LockWrites taken shared and the
// check that the lock's session still holds the lock; guard runs them
// alone for a transaction that had no statement of that kind before its
// commit.
type guardTx struct {
	pgx.Tx
	ls      *lockSession
	checked bool
}

func (g *guardTx) queueGuard(b *pgx.Batch) {
	b.Queue("SELECT pg_advisory_xact_lock_shared($1, $2)", LockClass, LockWrites)
	b.Queue(lockHeldSQL, g.ls.pid, uint32(LockClass), uint32(LockCA), g.ls.start)
}

func (g *guardTx) readGuard(br pgx.BatchResults) error {
	if _, err := br.Exec(); err != nil {
		return err
	}
	var held bool
	if err := br.QueryRow().Scan(&held); err != nil {
		return err
	}
	if !held {
		return g.ls.lostError()
	}
	return nil
}

// send sends the guard, then b's statements, in one round trip, and
// returns the results of b's statements.
func (g *guardTx) send(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	g.checked = true
	nb := &pgx.Batch{}
	g.queueGuard(nb)
	nb.QueuedQueries = append(nb.QueuedQueries, b.QueuedQueries...)
	br := g.Tx.SendBatch(ctx, nb)
	if err := g.readGuard(br); err != nil {
		br.Close()
		return nil, err
	}
	return br, nil
}

// guard checks the lock in a round trip of its own, if no statement did.
func (g *guardTx) guard(ctx context.Context) error {
	if g.checked {
		return nil
	}
	br, err := g.send(ctx, &pgx.Batch{})
	if err != nil {
		return err
	}
	return br.Close()
}

func (g *guardTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if g.checked {
		return g.Tx.Exec(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := g.send(ctx, b)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	return tag, firstErr(err, br.Close())
}

func (g *guardTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if g.checked {
		return g.Tx.QueryRow(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := g.send(ctx, b)
	if err != nil {
		return errRow{err}
	}
	return batchRow{br}
}

func (g *guardTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if g.checked {
		return g.Tx.SendBatch(ctx, b)
	}
	br, err := g.send(ctx, b)
	if err != nil {
		return errBatch{err}
	}
	return br
}

func (g *guardTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := g.guard(ctx); err != nil {
		return nil, err
	}
	return g.Tx.Query(ctx, sql, args...)
}

func (g *guardTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := g.guard(ctx); err != nil {
		return 0, err
	}
	return g.Tx.CopyFrom(ctx, table, columns, src)
}

// batchRow is the one row of the last statement of a batch.
type batchRow struct{ br pgx.BatchResults }

func (r batchRow) Scan(dest ...any) error {
	err := r.br.QueryRow().Scan(dest...)
	return firstErr(err, r.br.Close())
}

// firstErr is a, or b when a is nil.
func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow(b) }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }
