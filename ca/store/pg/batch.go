package pg

import (
	"context"
	"fmt"
	"io/fs"
	"minica/ca/store"

	"github.com/jackc/pgx/v5"
)

// insertRecord is the statement of a store.Reservation.
const insertRecord = `INSERT INTO minica_records (serial, name, status, issued_at, data) VALUES ($1, $2, $3, $4, $5)`

// queueRecords sends one statement per record in one round trip.
func queueRecords(ctx context.Context, tx pgx.Tx, sql string, rs []*store.Record) error {
	b := &pgx.Batch{}
	for _, r := range rs {
		b.Queue(sql, r.Serial, r.Name, string(r.Status), r.IssuedAt, string(store.EncodeRecord(r)))
	}
	return tx.SendBatch(ctx, b).Close()
}

// ReserveGroup commits the pending rows of a batch's group in one
// transaction: each commit waits for the WAL to reach the disk, as each
// sync of the file store does, so with the group's completion in one
// transaction too (CompleteGroup) a group of 64 certificates costs two
// commits instead of 128.
func (s *Store) ReserveGroup(rs []*store.Record) ([]store.Reservation, error) {
	err := s.write(fmt.Sprintf("reserving %d serials", len(rs)), func(ctx context.Context, tx pgx.Tx) error {
		return queueRecords(ctx, tx, insertRecord, rs)
	})
	if isUniqueViolation(err) {
		return nil, fmt.Errorf("reserving %d serials: %w", len(rs), fs.ErrExist)
	}
	if err != nil {
		return nil, err
	}
	res := make([]store.Reservation, len(rs))
	for i := range res {
		res[i] = committedRow{}
	}
	return res, nil
}
