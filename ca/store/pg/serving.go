package pg

import (
	"context"
	"fmt"
	"minica/ca/store"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// LockServe is the advisory lock key (of class LockClass) that every
// serve of a PostgreSQL store holds shared while it runs.
const LockServe int32 = 4

// HoldServing takes the registration (LockServe, shared, on its own
// session), or takes it back when its session ended (retaken). A serve
// refused keeps no session.
func (s *Store) HoldServing() (retaken bool, err error) {
	held, retaken, err := s.serving.take(s.pool)
	if err != nil {
		return retaken, fmt.Errorf("registering serve in the store %q: %w", s.url, err)
	}
	if !held {
		s.serving.release()
		return retaken, fmt.Errorf("%w: minica store copy --use is moving the database away from %q", store.ErrStoreSwitched, s.url)
	}
	return retaken, nil
}

// ExcludeServing takes LockServe exclusive on a connection of its own,
// or fails with a store.ServeRunningError naming the pids of the serves that
// hold it (from their application_name, minica/PID).
func (s *Store) ExcludeServing() (release func(), err error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return nil, fmt.Errorf("looking for serves of the store %q: %w", s.url, err)
	}
	closeConn := func() {
		ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
		conn.Close(ctx)
		cancel()
	}
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", LockClass, LockServe).Scan(&ok); err != nil {
		closeConn()
		return nil, fmt.Errorf("looking for serves of the store %q: %w", s.url, err)
	}
	if ok {
		return closeConn, nil
	}
	rows, err := conn.Query(ctx, `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 2
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`, uint32(LockClass), uint32(LockServe))
	var pids []int
	if err == nil {
		for rows.Next() {
			var app string
			if rows.Scan(&app) == nil {
				if pid, err := strconv.Atoi(strings.TrimPrefix(app, "minica/")); err == nil {
					pids = append(pids, pid)
				}
			}
		}
		rows.Close()
	}
	closeConn()
	slices.Sort(pids)
	return nil, &store.ServeRunningError{Where: fmt.Sprintf("the store %q", s.url), PIDs: slices.Compact(pids)}
}
