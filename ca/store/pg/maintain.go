package pg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"math/big"

	"github.com/jackc/pgx/v5"

	"minica/ca/store"
	"minica/revoke"
)

// Repair finds nothing to repair: every write is a transaction, so
// nothing is ever half-written.
func (s *Store) Repair(fixed, problem func(string)) error { return nil }

// Reindex does nothing: the database indexes the names itself.
func (s *Store) Reindex() error { return nil }

// DropUnreadable reports the row: a database row is not what a crash
// leaves, so it is left to a person.
func (s *Store) DropUnreadable(corrupt *store.CorruptRecordError, fixed, problem func(string)) error {
	problem(fmt.Sprintf("%v, and no certificate with serial %s exists: correct or delete the row by hand", corrupt, corrupt.Serial))
	return nil
}

// CheckCRL makes crl-delta.pem and crl-delta.der hold the database's
// current delta CRL (store.CheckDeltaCRLCopy), and crl.pem and crl.der its
// current CRL (what a crash after the database saved them, or a CRL
// published on another host, leaves stale), and returns that CRL, or nil
// (reported) when there is none.
func (s *Store) CheckCRL(fixed, problem func(string)) (*revoke.CRL, error) {
	if err := store.CheckDeltaCRLCopy(s, s.dir, s.crash, fixed, problem); err != nil {
		return nil, err
	}
	crl, der, err := store.LoadCRL(s, s.cert)
	if err != nil {
		problem(err.Error())
		return nil, nil
	}
	if store.CopyHolds(s.dir, store.CRLPEMFile, store.CRLDERFile, der) {
		return crl, nil
	}
	if err := store.WriteCRLCopy(s.dir, der, s.crash); err != nil {
		return nil, err
	}
	fixed(fmt.Sprintf("rewrote %s and %s from the store (CRL %s): they were missing or stale", store.CRLPEMFile, store.CRLDERFile, crl.Number()))
	return crl, nil
}

// PublishedCopies returns crl.der and crl.pem of the CA directory: they
// may be newer than a database restored from a backup.
func (s *Store) PublishedCopies() []store.CRLCopy {
	var out []store.CRLCopy
	for _, f := range []string{store.CRLDERFile, store.CRLPEMFile} {
		if data, err := s.dir.ReadFile(f); err == nil {
			out = append(out, store.CRLCopy{Name: s.dir.Join(f), Data: data})
		}
	}
	return out
}

// RaiseCRLNumber makes the last reserved CRL number at least n, reporting
// whether it was lower.
func (s *Store) RaiseCRLNumber(n *big.Int) (bool, error) {
	var raised bool
	err := s.write("raising the CRL number", func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "UPDATE minica_crl SET last_number = $1::numeric WHERE id = 1 AND last_number < $1::numeric AND coalesce(number, 0) < $1::numeric", n.String())
		raised = err == nil && tag.RowsAffected() == 1
		return err
	})
	return raised, err
}

// AdoptPublishedCRL saves the CRL that Init published in the new CA's
// directory as the database's current CRL, whose number is the
// database's from then on.
func (s *Store) AdoptPublishedCRL() error {
	der, err := s.dir.ReadFile(store.CRLDERFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	n, err := revoke.CRLNumber(der, s.cert)
	if err != nil {
		return fmt.Errorf("reading CRL %q: %w", s.dir.Join(store.CRLDERFile), err)
	}
	err = s.write("saving the first CRL", func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE minica_crl SET last_number = greatest(last_number, $1::numeric), number = $1::numeric, der = $2, version = version + 1 WHERE id = 1`, n.String(), der)
		return err
	})
	if err != nil {
		return err
	}
	// crl.pem and crl.der stay, as the published copy; the number is the
	// database's now.
	if err := s.dir.Root().Remove(store.CRLNumberFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return s.dir.SyncDir(".")
}

// Load writes the copy d in one transaction, the tables locked and
// checked empty first, the records with COPY as they stream from the
// source; the current CRL and delta CRL become d's (none where d has
// none), and the last CRL number at least the delta's. The published
// copies in the CA directory stay as they are.
func (s *Store) Load(d *store.Contents) (int, error) {
	records := 0
	ctx := context.Background()
	if d.DeltaCRL != nil {
		if err := store.CheckDeltaToSave(d.DeltaNumber, d.DeltaCRL); err != nil {
			return 0, err
		}
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.checkEmpty(ctx, tx); err != nil {
			return err
		}
		var err error
		if records, err = loadRecords(ctx, tx, d.Records); err != nil {
			return err
		}
		if err := loadRest(ctx, tx, d); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE minica_crl SET last_number = greatest(last_number, $1::numeric, $4::numeric),
			number = $2::numeric, der = $3, version = version + 1,
			delta_number = $4::numeric, delta_der = $5, delta_version = delta_version + 1 WHERE id = 1`,
			d.LastNumber.String(), numeric(d.CRLNumber), d.CRL, numeric(d.DeltaNumber), d.DeltaCRL)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("copying to %q: %w", s.url, err)
	}
	return records, nil
}

// numeric is n as a parameter of a numeric column: NULL for nil.
func numeric(n *big.Int) any {
	if n == nil {
		return nil
	}
	return n.String()
}

// checkEmpty locks the tables that a copy writes, for the rest of tx,
// and fails with store.ErrStoreNotEmpty when one holds a row. The nonces
// do not count: a copy does not carry them.
func (s *Store) checkEmpty(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, "LOCK TABLE minica_records, minica_revocations, minica_enrollments, minica_acme_objects, minica_crl IN EXCLUSIVE MODE"); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM (SELECT 1 FROM minica_records LIMIT 1) r)
		+ (SELECT count(*) FROM (SELECT 1 FROM minica_revocations LIMIT 1) v)
		+ (SELECT count(*) FROM (SELECT 1 FROM minica_enrollments LIMIT 1) e)
		+ (SELECT count(*) FROM (SELECT 1 FROM minica_acme_objects LIMIT 1) o)`).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%w: %q holds records, revocations, enrollments or ACME objects", store.ErrStoreNotEmpty, s.url)
	}
	return nil
}

// loadRecords copies recs into minica_records as they stream, and
// returns how many it wrote; an error of recs stops it.
func loadRecords(ctx context.Context, tx pgx.Tx, recs iter.Seq2[*store.Record, error]) (int, error) {
	next, stop := iter.Pull2(recs)
	defer stop()
	records := 0
	var rowErr error
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"minica_records"}, []string{"serial", "name", "status", "issued_at", "data"},
		pgx.CopyFromFunc(func() ([]any, error) {
			rec, err, ok := next()
			if !ok {
				return nil, nil
			}
			if err != nil {
				rowErr = err
				return nil, err
			}
			records++
			return []any{rec.Serial, rec.Name, string(rec.Status), rec.IssuedAt, string(store.EncodeRecord(rec))}, nil
		}))
	if rowErr != nil {
		return records, rowErr
	}
	return records, err
}

// loadRest writes the revocation events, the enrollments and the ACME
// objects of d.
func loadRest(ctx context.Context, tx pgx.Tx, d *store.Contents) error {
	rows := make([][]any, len(d.Events))
	for i, ev := range d.Events {
		rows[i] = []any{ev.Serial, nullTime(ev.RevokedAt), ev.Reason, nullTime(ev.NotAfter), ev.Lifted}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"minica_revocations"}, []string{"serial", "revoked_at", "reason", "not_after", "lifted"}, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	for _, e := range d.Enrollments {
		if _, err := tx.Exec(ctx, "INSERT INTO minica_enrollments (id, name, data) VALUES ($1, $2, $3)", e.ID, e.Name, string(e.Data)); err != nil {
			return fmt.Errorf("copying enrollment %s: %w", e.ID, err)
		}
	}
	for _, o := range d.Objects {
		err := checkObject(o.Kind, o.ID)
		if err == nil {
			_, err = tx.Exec(ctx, "INSERT INTO minica_acme_objects (kind, id, data) VALUES ($1, $2, $3)", o.Kind, o.ID, string(o.Data))
		}
		if err != nil {
			return fmt.Errorf("copying ACME %s %s: %w", o.Kind, o.ID, err)
		}
	}
	return nil
}

// Prepare readies a PostgreSQL store for a new CA: it is migrated
// and must belong to no CA yet.
func Prepare(url string) error {
	if _, _, err := Migrate(url); err != nil {
		return err
	}
	s, err := connect(url)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var owner string
	err = s.pool.QueryRow(ctx, "SELECT value FROM minica_meta WHERE key = 'ca_sha256'").Scan(&owner)
	if err == nil {
		return fmt.Errorf("%w: %q holds the records of the CA whose certificate has SHA-256 %s; give each CA a database of its own", store.ErrForeignStore, url, owner)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("store %q: %w", url, err)
	}
	return nil
}
