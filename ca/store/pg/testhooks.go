package pg

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// The hooks below let tests inject faults into a Store and watch what it
// does; a program never calls them.

// SetBeforeCommit makes fn run inside each write transaction before it
// commits, with the attempt number (from 0); an error aborts the attempt
// as the server's would. Nil removes it. Set it only while no write runs.
func (s *Store) SetBeforeCommit(fn func(ctx context.Context, tx pgx.Tx, attempt int) error) {
	s.beforeCommit = fn
}

// Retries returns how many transactions were retried after a
// serialization failure or a deadlock.
func (s *Store) Retries() int64 { return s.retries.Load() }

// LockSessionPID returns the server pid of the session holding the CA
// lock for s, or 0 when s does not hold it.
func (s *Store) LockSessionPID() int32 {
	if ls := s.held.Load(); ls != nil {
		return ls.pid
	}
	return 0
}
