package pg

import (
	"context"
	"fmt"
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

// HoldCRLSigner tries the lease (LockCRLSigner, exclusive) on its own
// session, which a replica that did not get it keeps for its next try.
func (s *Store) HoldCRLSigner() (bool, error) {
	held, _, err := s.lease.take(s.pool)
	if err != nil {
		return false, fmt.Errorf("taking the CRL signer's lease in %q: %w", s.url, err)
	}
	return held, nil
}

// ReleaseCRLSigner ends the lease's session.
func (s *Store) ReleaseCRLSigner() { s.lease.release() }

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
