package pg

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sessionLock is an advisory lock (of class LockClass) held by a session
// of its own: a connection opened for it, never the pool's (whose
// connections come and go), on which the lock is tried until it is held,
// and then held until the connection ends. PostgreSQL ends the session of
// a process that died (even by SIGKILL), which frees the lock for the next
// process that tries it. The CRL signer's lease and a serve's registration
// are each one.
type sessionLock struct {
	key    int32 // the lock's key in LockClass
	shared bool  // taken shared (pg_try_advisory_lock_shared), else exclusive

	mu   sync.Mutex
	conn *pgx.Conn // the session; a try that failed keeps it for the next
	held bool      // whether conn holds the lock
}

// take tries the lock on the session, within leaseTimeout, and reports
// whether it is held. A session that holds it and still answers keeps it;
// one that stopped answering is ended (lost) and a new session tries. A
// new session connects with pool's configuration.
func (l *sessionLock) take(pool *pgxpool.Pool) (held, lost bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	if l.conn != nil && l.held {
		// A session alive still holds its session-level lock.
		if l.conn.Ping(ctx) == nil {
			return true, false, nil
		}
		l.closeLocked()
		lost = true
	}
	if l.conn == nil || l.conn.IsClosed() {
		conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig)
		if err != nil {
			return false, lost, err
		}
		l.conn = conn
	}
	query := "SELECT pg_try_advisory_lock($1, $2)"
	if l.shared {
		query = "SELECT pg_try_advisory_lock_shared($1, $2)"
	}
	var ok bool
	if err := l.conn.QueryRow(ctx, query, LockClass, l.key).Scan(&ok); err != nil {
		l.closeLocked()
		return false, lost, err
	}
	l.held = ok
	return ok, lost, nil
}

// release ends the session, which frees the lock; without one it does
// nothing.
func (l *sessionLock) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closeLocked()
}

// closeLocked is release for a caller that holds mu.
func (l *sessionLock) closeLocked() {
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
		l.conn.Close(ctx)
		cancel()
	}
	l.conn, l.held = nil, false
}
