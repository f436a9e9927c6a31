package ca

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"minica/revoke"
)

// ErrStoreNotEmpty is returned by CopyStore for a target that holds records,
// revocations or enrollments already: a copy never merges two databases.
var ErrStoreNotEmpty = errors.New("the target store is not empty")

// CopyResult tells what CopyStore copied.
type CopyResult struct {
	To          string // the target, as given
	Records     int
	Revocations int // serials whose latest revocation event was copied
	Enrollments int
	CRLNumber   *big.Int // the current CRL's number, nil without one
}

// storeData is the whole database of a CA, read for a copy. Records are
// streamed; the rest is small next to them.
type storeData struct {
	events      []revEvent
	enrollments []*Enrollment // oldest first; each name's latest last
	lastNumber  *big.Int      // the last CRL number used
	crl         []byte        // the current CRL, DER; nil without one
	crlNumber   *big.Int
}

// CopyStore copies the CA's database, whichever store holds it, to the
// store to: a postgres:// URL (migrated first if need be) or the path of a
// CA directory of the same CA, whose file store must be empty (a copy of
// the CA's ca.crt, ca.key, chain.pem and settings.json). Records are copied
// as they are (pending and void ones included), the revocation log as the
// latest event of each serial, the CRL number and the current CRL, and
// every enrollment. The target must hold no record, revocation or
// enrollment (ErrStoreNotEmpty); a PostgreSQL target is written in one
// transaction, so a failed copy leaves it empty. The caller holds the lock.
func (c *CA) CopyStore(to string) (*CopyResult, error) {
	data, err := c.readStoreData()
	if err != nil {
		return nil, err
	}
	if IsPostgresStore(to) {
		return c.copyToPG(to, data)
	}
	if err := CheckStore(to); err == nil || strings.Contains(to, "://") {
		return nil, fmt.Errorf("%w %s: store copy --to takes a postgres:// URL or the path of a CA directory", ErrBadStore, printable(to))
	}
	return c.copyToDir(to, data)
}

func (c *CA) readStoreData() (*storeData, error) {
	d := &storeData{}
	var err error
	if d.events, err = c.latestRevEvents(); err != nil {
		return nil, err
	}
	if d.lastNumber, err = c.lastCRLNumber(); err != nil {
		return nil, err
	}
	der, err := c.readCRLDER()
	switch {
	case err == nil:
		d.crl = der
		if d.crlNumber, err = revoke.CRLNumber(der, c.Cert); err != nil {
			return nil, fmt.Errorf("reading CRL %q: %w", c.crlName(), err)
		}
		if d.crlNumber.Cmp(d.lastNumber) > 0 {
			d.lastNumber = d.crlNumber
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("reading CRL %q: %w", c.crlName(), err)
	}
	latest := map[string]string{} // name: the ID of its latest enrollment
	for e, err := range c.Enrollments() {
		if err != nil {
			return nil, fmt.Errorf("reading the enrollments: %w (run minica check)", err)
		}
		d.enrollments = append(d.enrollments, e)
		if _, ok := latest[e.Name]; !ok {
			l, err := c.EnrollmentByName(e.Name)
			if err != nil {
				return nil, err
			}
			latest[e.Name] = l.ID
		}
	}
	// Oldest first, and each name's latest after its others, so that the
	// target's "latest of a name" is the source's.
	slices.SortStableFunc(d.enrollments, func(a, b *Enrollment) int {
		al, bl := latest[a.Name] == a.ID, latest[b.Name] == b.ID
		if a.Name == b.Name && al != bl {
			if al {
				return 1
			}
			return -1
		}
		if cmp := a.CreatedAt.Compare(b.CreatedAt); cmp != 0 {
			return cmp
		}
		return strings.Compare(a.ID, b.ID)
	})
	return d, nil
}

// lastCRLNumber returns the last CRL number used (0 for none).
func (c *CA) lastCRLNumber() (*big.Int, error) {
	last := new(big.Int)
	if s, ok := c.db.(*pgStore); ok {
		ctx, cancel := context.WithTimeout(context.Background(), pgOpTimeout)
		defer cancel()
		var text string
		if err := s.pool.QueryRow(ctx, "SELECT last_number::text FROM minica_crl WHERE id = 1").Scan(&text); err != nil {
			return nil, fmt.Errorf("reading the CRL number from %q: %w", s.url, err)
		}
		last.SetString(text, 10)
		return last, nil
	}
	data, err := c.dir.ReadFile(crlNumberFile)
	if errors.Is(err, fs.ErrNotExist) {
		return last, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the CRL number: %w", err)
	}
	if _, ok := last.SetString(strings.TrimSpace(string(data)), 10); !ok || last.Sign() < 0 {
		return nil, fmt.Errorf("corrupt CRL number file %q", c.dir.Join(crlNumberFile))
	}
	return last, nil
}

// recordRows streams the records for a copy; a corrupt one stops it.
func (c *CA) recordRows(each func(*Record) error) error {
	for rec, err := range c.Records() {
		if err != nil {
			return fmt.Errorf("reading the records: %w (run minica check first)", err)
		}
		if err := each(rec); err != nil {
			return err
		}
	}
	return nil
}

func (c *CA) copyToPG(url string, d *storeData) (*CopyResult, error) {
	if _, _, err := MigrateStore(url); err != nil {
		return nil, err
	}
	s, err := openPGStore(url, c.Cert)
	if err != nil {
		return nil, err
	}
	defer s.close()
	res := &CopyResult{To: url, Revocations: len(d.events), Enrollments: len(d.enrollments), CRLNumber: d.crlNumber}
	ctx := context.Background()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "LOCK TABLE minica_records, minica_revocations, minica_enrollments, minica_crl IN EXCLUSIVE MODE"); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM (SELECT 1 FROM minica_records LIMIT 1) r)
			+ (SELECT count(*) FROM (SELECT 1 FROM minica_revocations LIMIT 1) v)
			+ (SELECT count(*) FROM (SELECT 1 FROM minica_enrollments LIMIT 1) e)`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w: %q holds records, revocations or enrollments", ErrStoreNotEmpty, url)
		}
		next, stop := pullRecords(c)
		defer stop()
		var rowErr error
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"minica_records"}, []string{"serial", "name", "status", "issued_at", "data"},
			pgx.CopyFromFunc(func() ([]any, error) {
				rec, err, ok := next()
				if !ok {
					return nil, nil
				}
				if err != nil {
					rowErr = fmt.Errorf("reading the records: %w (run minica check first)", err)
					return nil, rowErr
				}
				res.Records++
				return []any{rec.Serial, rec.Name, string(rec.Status), rec.IssuedAt, string(encodeRecord(rec))}, nil
			}))
		if rowErr != nil {
			return rowErr
		}
		if err != nil {
			return err
		}
		rows := make([][]any, len(d.events))
		for i, ev := range d.events {
			rows[i] = []any{ev.Serial, nullTime(ev.RevokedAt), ev.Reason, nullTime(ev.NotAfter), ev.Lifted}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"minica_revocations"}, []string{"serial", "revoked_at", "reason", "not_after", "lifted"}, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		for _, e := range d.enrollments {
			if _, err := tx.Exec(ctx, "INSERT INTO minica_enrollments (id, name, data) VALUES ($1, $2, $3)", e.ID, e.Name, string(encodeEnrollment(e))); err != nil {
				return err
			}
		}
		var number any
		if d.crlNumber != nil {
			number = d.crlNumber.String()
		}
		_, err = tx.Exec(ctx, `UPDATE minica_crl SET last_number = greatest(last_number, $1::numeric), number = $2::numeric, der = $3, version = version + 1 WHERE id = 1`,
			d.lastNumber.String(), number, d.crl)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("copying to %q: %w", url, err)
	}
	return res, nil
}

// pullRecords turns c.Records into a pull iterator.
func pullRecords(c *CA) (next func() (*Record, error, bool), stop func()) {
	type item struct {
		r   *Record
		err error
	}
	ch := make(chan item)
	done := make(chan struct{})
	go func() {
		defer close(ch)
		for r, err := range c.Records() {
			select {
			case ch <- item{r, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return func() (*Record, error, bool) {
			it, ok := <-ch
			return it.r, it.err, ok
		}, func() {
			close(done)
			for range ch {
			}
		}
}

func (c *CA) copyToDir(dir string, d *storeData) (*CopyResult, error) {
	t, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	if !t.Cert.Equal(c.Cert) {
		return nil, fmt.Errorf("%w: %q is another CA's directory", ErrForeignStore, dir)
	}
	if t.dir.Path() == c.dir.Path() && c.db == nil {
		return nil, fmt.Errorf("%w: %q is where the database is already", ErrStoreNotEmpty, dir)
	}
	for _, err := range t.Records() {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %q holds records", ErrStoreNotEmpty, dir)
	}
	if _, err := t.dir.Stat(revlogFile); err == nil {
		return nil, fmt.Errorf("%w: %q has a revocation log", ErrStoreNotEmpty, t.dir.Join(revlogFile))
	}
	for range t.Enrollments() {
		return nil, fmt.Errorf("%w: %q holds enrollments", ErrStoreNotEmpty, dir)
	}
	res := &CopyResult{To: dir, Revocations: len(d.events), Enrollments: len(d.enrollments), CRLNumber: d.crlNumber}
	if err := t.dir.MkdirAll(nameIndexDir); err != nil {
		return nil, err
	}
	err = c.recordRows(func(rec *Record) error {
		f, err := t.reserve(rec)
		if err != nil {
			return fmt.Errorf("copying record %s: %w", rec.Serial, err)
		}
		res.Records++
		return f.Close()
	})
	if err != nil {
		return nil, err
	}
	if err := t.rebuildNameIndex(); err != nil {
		return nil, err
	}
	if done, err := t.syncAll(); err != nil {
		return nil, err
	} else if !done {
		if err := t.dir.SyncDir("db"); err != nil {
			return nil, err
		}
	}
	if len(d.events) > 0 {
		err := t.dir.WriteAtomicFrom(revlogFile, 0o644, func(w io.Writer) error {
			bw := bufio.NewWriter(w)
			for _, ev := range d.events {
				line, _ := json.Marshal(ev)
				bw.Write(append(line, '\n'))
			}
			return bw.Flush()
		})
		if err != nil {
			return nil, err
		}
	}
	if err := t.mkEnrollDirs(); err != nil {
		return nil, err
	}
	for _, e := range d.enrollments {
		if err := t.createEnrollmentFiles(e); err != nil {
			return nil, fmt.Errorf("copying enrollment %s: %w", e.ID, err)
		}
	}
	last, err := t.lastCRLNumber()
	if err != nil {
		return nil, err
	}
	if d.lastNumber.Cmp(last) > 0 {
		last = d.lastNumber
	}
	if err := t.dir.WriteAtomic(crlNumberFile, []byte(last.String()+"\n"), 0o644); err != nil {
		return nil, err
	}
	if d.crl != nil {
		if err := t.writeCRLFiles(d.crl); err != nil {
			return nil, err
		}
	} else {
		for _, f := range []string{CRLPEMFile, CRLDERFile} {
			if err := t.dir.root.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
	}
	return res, nil
}

// prepareInitStore readies the store of a new CA before anything is
// written in its directory: a PostgreSQL store is migrated and must belong
// to no CA yet.
func prepareInitStore(store string) error {
	if !IsPostgresStore(store) {
		return CheckStore(store)
	}
	if _, _, err := MigrateStore(store); err != nil {
		return err
	}
	s, err := connectPG(store)
	if err != nil {
		return err
	}
	defer s.close()
	ctx, cancel := context.WithTimeout(context.Background(), pgOpTimeout)
	defer cancel()
	var owner string
	err = s.pool.QueryRow(ctx, "SELECT value FROM minica_meta WHERE key = 'ca_sha256'").Scan(&owner)
	if err == nil {
		return fmt.Errorf("%w: %q holds the records of the CA whose certificate has SHA-256 %s; give each CA a database of its own", ErrForeignStore, store, owner)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("store %q: %w", store, err)
	}
	return nil
}

// adoptFirstCRL saves the CRL that Init published in the new CA's
// directory into its PostgreSQL store.
func (c *CA) adoptFirstCRL() error {
	s, ok := c.db.(*pgStore)
	if !ok {
		return nil
	}
	der, err := c.dir.ReadFile(CRLDERFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	n, err := revoke.CRLNumber(der, c.Cert)
	if err != nil {
		return fmt.Errorf("reading CRL %q: %w", c.dir.Join(CRLDERFile), err)
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
	if err := c.dir.root.Remove(crlNumberFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return c.dir.SyncDir(".")
}
