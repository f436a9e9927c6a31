package pg

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// LockCRLSigner is the advisory lock key (of class LockClass) of the
// CRL signer's lease: of the `minica serve` replicas on one database, the
// one whose session holds it re-signs the CRL. PostgreSQL ends a session
// whose process died (even by SIGKILL), which frees the lease for the next
// replica that asks.
const LockCRLSigner int32 = 2

// notifyChannel is the channel saveCRL notifies with a new CRL's number.
const notifyChannel = "minica_crl"

// leaseTimeout bounds each round trip of the lease and the listener.
const leaseTimeout = 5 * time.Second

// pgLease is the CRL signer's lease of one CA handle: a connection of its
// own (never the pool's, whose connections come and go), on which the
// advisory lock is tried until it is held, and then held until the
// connection ends.
type pgLease struct {
	mu   sync.Mutex
	conn *pgx.Conn
	held bool
}

// HoldCRLSigner tries the lease on the lease's own connection.
func (s *Store) HoldCRLSigner() (bool, error) {
	l := &s.lease
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	if l.conn != nil && l.held {
		// A session alive still holds its session-level lock.
		if err := l.conn.Ping(ctx); err == nil {
			return true, nil
		}
		l.closeLocked()
	}
	if l.conn == nil || l.conn.IsClosed() {
		conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
		if err != nil {
			return false, fmt.Errorf("taking the CRL signer's lease in %q: %w", s.url, err)
		}
		l.conn = conn
	}
	var ok bool
	if err := l.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", LockClass, LockCRLSigner).Scan(&ok); err != nil {
		l.closeLocked()
		return false, fmt.Errorf("taking the CRL signer's lease in %q: %w", s.url, err)
	}
	l.held = ok
	return ok, nil
}

// ReleaseCRLSigner ends the lease's session.
func (s *Store) ReleaseCRLSigner() {
	s.lease.mu.Lock()
	defer s.lease.mu.Unlock()
	s.lease.closeLocked()
}

// closeLocked ends the lease's session, which releases the lock.
func (l *pgLease) closeLocked() {
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
		l.conn.Close(ctx)
		cancel()
	}
	l.conn, l.held = nil, false
}

// CRLNotifications listens on a connection of its own.
func (s *Store) CRLNotifications(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	go s.listen(ctx, ch)
	return ch
}

func (s *Store) listen(ctx context.Context, ch chan<- struct{}) {
	signal := func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	backoff := 250 * time.Millisecond
	for first := true; ctx.Err() == nil; first = false {
		conn, err := s.listenConn(ctx)
		if err == nil {
			backoff = 250 * time.Millisecond
			if !first {
				signal() // what was published while cut off
			}
			for {
				if _, err = conn.WaitForNotification(ctx); err != nil {
					break
				}
				signal()
			}
			cctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
			conn.Close(cctx)
			cancel()
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (s *Store) listenConn(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, leaseTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, s.pool.Config().ConnConfig)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(cctx, "LISTEN "+notifyChannel); err != nil {
		conn.Close(cctx)
		return nil, err
	}
	return conn, nil
}

// checkWritable refuses a database whose sessions start read-only
// (default_transaction_read_only, as a replica behind a read-only
// endpoint, or a database set so by its operator): every write of the CA
// would fail there, after it signed.
func (s *Store) checkWritable(ctx context.Context) error {
	var ro string
	if err := s.pool.QueryRow(ctx, "SHOW transaction_read_only").Scan(&ro); err != nil {
		return fmt.Errorf("store %q: %w", s.url, err)
	}
	if ro == "on" {
		return fmt.Errorf("%w: %q takes no writes (transaction_read_only is on)", ErrReadOnlyStore, s.url)
	}
	return nil
}
