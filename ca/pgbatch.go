package ca

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/jackc/pgx/v5"
)

// groupStore is a store that reserves the serials of a batch's group
// together (see IssueBatch): on PostgreSQL each commit waits for the WAL
// to reach the disk, as each sync of the file store does, so with the
// group's completion in one transaction too (completeInDatabase) a group
// of 64 certificates costs two commits instead of 128.
type groupStore interface {
	// reserveGroup creates the pending records of rs in one transaction:
	// all of them or none. A taken serial gives an error matching
	// fs.ErrExist.
	reserveGroup(rs []*Record) error
}

// writeGroupStore is writeGroup on a groupStore. The invariant is the one
// of a single issuance: a serial's pending record is committed before its
// certificate is signed. The workers prepare every request (validation and
// the key), one transaction reserves the serials of those that passed, and
// the workers sign and write their certificates.
func (c *CA) writeGroupStore(gs groupStore, signer crypto.Signer, reqs []Request, workers int) ([]*batchCert, []error) {
	written := make([]*batchCert, len(reqs))
	errs := make([]error, len(reqs))
	preps := make([]*prepared, len(reqs))
	inParallel(len(reqs), workers, func(i int) { preps[i], errs[i] = c.prepare(reqs[i]) })
	var todo []int
	for i := range reqs {
		if errs[i] == nil {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return written, errs
	}
	recs, err := c.reserveGroup(gs, reqs, preps, todo)
	if err != nil {
		for _, i := range todo {
			errs[i] = err
		}
		return written, errs
	}
	inParallel(len(todo), workers, func(j int) {
		i := todo[j]
		written[i], errs[i] = c.signBatchCert(signer, reqs[i], preps[i], recs[j], nil)
	})
	return written, errs
}

// reserveGroup reserves a random serial for each request of todo, drawing
// them all again on the (astronomically unlikely) collision.
func (c *CA) reserveGroup(gs groupStore, reqs []Request, preps []*prepared, todo []int) ([]*Record, error) {
	recs := make([]*Record, len(todo))
	for range 8 {
		for j, i := range todo {
			n, err := randomSerial()
			if err != nil {
				return nil, err
			}
			recs[j] = pendingRecord(reqs[i], preps[i].now, n)
		}
		err := gs.reserveGroup(recs)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reserving serial: %w", err)
		}
		return recs, nil
	}
	return nil, errors.New("reserving serial: 8 random serials in a row were taken")
}

// inParallel runs fn(0) to fn(n-1) on at most workers goroutines.
func inParallel(n, workers int, fn func(i int)) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := range jobs {
				fn(i)
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
}

// pgInsertRecord is the statement of a reservation, as pgStore.reserve
// sends it.
const pgInsertRecord = `INSERT INTO minica_records (serial, name, status, issued_at, data) VALUES ($1, $2, $3, $4, $5)`

// queueRecords sends one statement per record in one round trip.
func queueRecords(ctx context.Context, tx pgx.Tx, sql string, rs []*Record) error {
	b := &pgx.Batch{}
	for _, r := range rs {
		b.Queue(sql, r.Serial, r.Name, string(r.Status), r.IssuedAt, string(encodeRecord(r)))
	}
	return tx.SendBatch(ctx, b).Close()
}

func (s *pgStore) reserveGroup(rs []*Record) error {
	err := s.write(fmt.Sprintf("reserving %d serials", len(rs)), func(ctx context.Context, tx pgx.Tx) error {
		return queueRecords(ctx, tx, pgInsertRecord, rs)
	})
	if isUniqueViolation(err) {
		return fmt.Errorf("reserving %d serials: %w", len(rs), fs.ErrExist)
	}
	return err
}
