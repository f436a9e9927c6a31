package pg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"

	"minica/ca/store"
)

// checkObject refuses a kind or ID that the file engine could not name
// either, so that both engines take the same objects.
func checkObject(kind, id string) error {
	if !store.IsObjectKind(kind) || kind == "nonces" {
		return fmt.Errorf("invalid ACME object kind %q", kind)
	}
	if !store.IsObjectID(id) {
		return fmt.Errorf("invalid ACME object ID %q", id)
	}
	return nil
}

// CreateObject inserts the row of a new object.
func (s *Store) CreateObject(o store.Object) error {
	if err := checkObject(o.Kind, o.ID); err != nil {
		return err
	}
	err := s.write("creating ACME "+o.Kind+" "+o.ID, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO minica_acme_objects (kind, id, data) VALUES ($1, $2, $3)", o.Kind, o.ID, string(o.Data))
		return err
	})
	if isUniqueViolation(err) {
		return fmt.Errorf("ACME %s %s: %w", o.Kind, o.ID, fs.ErrExist)
	}
	return err
}

// PutObject inserts or replaces the row of an object.
func (s *Store) PutObject(o store.Object) error {
	if err := checkObject(o.Kind, o.ID); err != nil {
		return err
	}
	return s.write("writing ACME "+o.Kind+" "+o.ID, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO minica_acme_objects (kind, id, data) VALUES ($1, $2, $3)
			ON CONFLICT (kind, id) DO UPDATE SET data = EXCLUDED.data`, o.Kind, o.ID, string(o.Data))
		return err
	})
}

// Object reads the row of an object.
func (s *Store) Object(kind, id string) (store.Object, error) {
	if err := checkObject(kind, id); err != nil {
		return store.Object{}, fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var data string
	err := s.pool.QueryRow(ctx, "SELECT data FROM minica_acme_objects WHERE kind = $1 AND id = $2", kind, id).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Object{}, fmt.Errorf("ACME %s %s: %w", kind, id, fs.ErrNotExist)
	}
	if err != nil {
		return store.Object{}, fmt.Errorf("reading ACME %s %s from %q: %w", kind, id, s.url, err)
	}
	return store.Object{Kind: kind, ID: id, Data: []byte(data)}, nil
}

// Objects streams the rows of kind in ID order.
func (s *Store) Objects(kind string) iter.Seq2[store.Object, error] {
	if err := checkObject(kind, "x"); err != nil {
		return func(yield func(store.Object, error) bool) { yield(store.Object{}, err) }
	}
	return streamRows(s, "ACME "+kind, "SELECT id, data FROM minica_acme_objects WHERE kind = $1 ORDER BY id",
		func(id, data string) (store.Object, error) {
			return store.Object{Kind: kind, ID: id, Data: []byte(data)}, nil
		}, kind)
}

// ObjectKinds lists the kinds of the rows, sorted.
func (s *Store) ObjectKinds() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	rows, _ := s.pool.Query(ctx, "SELECT DISTINCT kind FROM minica_acme_objects ORDER BY kind")
	kinds, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing the ACME object kinds of %q: %w", s.url, err)
	}
	return kinds, nil
}

// DeleteObject deletes the row of an object.
func (s *Store) DeleteObject(kind, id string) error {
	if err := checkObject(kind, id); err != nil {
		return err
	}
	return s.write("removing ACME "+kind+" "+id, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "DELETE FROM minica_acme_objects WHERE kind = $1 AND id = $2", kind, id)
		return err
	})
}

// AddNonce inserts a nonce's row, and now and then deletes the expired
// ones.
func (s *Store) AddNonce(nonce string, expires time.Time) error {
	if !store.IsNonce(nonce) {
		return fmt.Errorf("invalid nonce %q", nonce)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if s.nonces.Add(1)%1024 == 0 {
		if _, err := s.pool.Exec(ctx, "DELETE FROM minica_acme_nonces WHERE expires < now()"); err != nil {
			return fmt.Errorf("pruning nonces in %q: %w", s.url, err)
		}
	}
	if _, err := s.pool.Exec(ctx, "INSERT INTO minica_acme_nonces (nonce, expires) VALUES ($1, $2)", nonce, expires); err != nil {
		return fmt.Errorf("adding a nonce to %q: %w", s.url, err)
	}
	return nil
}

// UseNonce deletes a nonce's row: only one DELETE of it returns the row,
// whichever replica runs it.
func (s *Store) UseNonce(nonce string, now time.Time) (bool, error) {
	if !store.IsNonce(nonce) {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var expires time.Time
	err := s.pool.QueryRow(ctx, "DELETE FROM minica_acme_nonces WHERE nonce = $1 RETURNING expires", nonce).Scan(&expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("using a nonce in %q: %w", s.url, err)
	}
	return now.Before(expires), nil
}
