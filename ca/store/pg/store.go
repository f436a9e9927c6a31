package pg

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"math/big"
	"minica/ca/store"
	"minica/ca/store/recordjson"
	"minica/internal/cadir"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Advisory locks of the store, pg_advisory_lock(LockClass, key): LockCA
// is the lock every mutation holds. Other keys of the class are free for
// other leases (a CRL signer, say).
const (
	LockClass int32 = 0x6d6e6361 // "mnca"
	LockCA    int32 = 1
)

// MaxAttempts bounds the retries of a transaction that failed for
// serialization; opTimeout bounds every statement but streaming reads.
const (
	MaxAttempts = 8
	opTimeout   = 30 * time.Second
)

// ErrReadOnlyStore is returned for a database that takes no writes (a hot
// standby): a CA cannot reserve a serial there.
var ErrReadOnlyStore = errors.New("the store is read-only")

// Store is the PostgreSQL store.
type Store struct {
	url  string
	pool *pgxpool.Pool
	// dir is the CA directory, where SaveCRL writes the published copy
	// of the current CRL; crashed, when set, is called after each file of
	// it is written (tests).
	dir     *cadir.Dir
	cert    *x509.Certificate
	crashed func(file string) error
	// retries counts transactions retried after a serialization failure.
	retries atomic.Int64
	// beforeCommit, set only by tests, runs inside a write transaction
	// before it commits, with the attempt number (from 0).
	beforeCommit func(ctx context.Context, tx pgx.Tx, attempt int) error
	// lease is the CRL signer's lease (see lease.go).
	lease sessionLock
	// held is the session of the CA lock while the handle holds it
	// (see lock.go), nil otherwise.
	held atomic.Pointer[lockSession]
	// serving is the registration of a running serve (see serving.go).
	serving sessionLock
	// nonces counts AddNonce calls: every 1024th prunes expired nonces.
	nonces atomic.Int64
}

// Open connects to the database at url, checks that its schema is
// the one this binary knows, and that it belongs to the CA cert (binding
// an empty store to it); dir is the CA directory, which holds the
// published copy of the current CRL.
func Open(url string, cert *x509.Certificate, dir *cadir.Dir) (*Store, error) {
	s, err := connect(url)
	if err != nil {
		return nil, err
	}
	if err := s.checkOpen(cert); err != nil {
		s.Close()
		return nil, err
	}
	s.dir, s.cert = dir, cert
	return s, nil
}

// connect opens a pool on url and pings it. The password comes from
// libpq's sources, as pgx reads them: PGPASSWORD, PGPASSFILE or ~/.pgpass,
// a service file (PGSERVICEFILE, ?service=NAME); sslmode and the other
// connection parameters are libpq's too.
func connect(url string) (*Store, error) {
	if err := CheckURL(url); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", strconv.QuoteToASCII(url), err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	// Names the holder of the advisory lock in other processes' errors.
	cfg.ConnConfig.RuntimeParams["application_name"] = "minica/" + strconv.Itoa(os.Getpid())
	// Every query of the store is short or streams; compiling one with
	// LLVM (a plan over 10^6 rows passes jit_above_cost) only delays its
	// first row.
	cfg.ConnConfig.RuntimeParams["jit"] = "off"
	cfg.MaxConns = 8
	// A command runs each statement a few times at most: preparing it
	// first would cost a round trip more than it saves.
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
		if err != nil {
			pool.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to the store %q: %w", url, err)
	}
	return &Store{url: url, pool: pool,
		lease:   sessionLock{key: LockCRLSigner},
		serving: sessionLock{key: LockServe, shared: true}}, nil
}

func (s *Store) String() string { return s.url }

// Close ends the lease, the serve registration and the pool.
func (s *Store) Close() error {
	s.ReleaseCRLSigner()
	s.serving.release()
	s.pool.Close()
	return nil
}

// Ping makes a round trip to the server, bounded by a few seconds.
func (s *Store) Ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("the store %q does not answer: %w", s.url, err)
	}
	return nil
}

// checkOpen refuses a standby, a schema other than this binary's, and the
// records of another CA.
func (s *Store) checkOpen(cert *x509.Certificate) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var standby bool
	if err := s.pool.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&standby); err != nil {
		return fmt.Errorf("store %q: %w", s.url, err)
	}
	if standby {
		return fmt.Errorf("%w: %q is a standby server in recovery", ErrReadOnlyStore, s.url)
	}
	if err := s.checkWritable(ctx); err != nil {
		return err
	}
	v, err := s.schemaVersion(ctx)
	if err != nil {
		return err
	}
	switch {
	case v > SchemaVersion:
		return &SchemaError{Store: s.url, Found: v}
	case v < SchemaVersion:
		return &SchemaError{Store: s.url, Found: v}
	}
	return s.bind(ctx, cert)
}

// bind records the CA certificate's fingerprint in a store that has none,
// and refuses a store that records another one.
func (s *Store) bind(ctx context.Context, cert *x509.Certificate) error {
	sum := sha256.Sum256(cert.Raw)
	want := hex.EncodeToString(sum[:])
	// Read first: every open would otherwise be a write, and a commit.
	var got string
	err := s.pool.QueryRow(ctx, "SELECT value FROM minica_meta WHERE key = 'ca_sha256'").Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.pool.QueryRow(ctx, `INSERT INTO minica_meta (key, value) VALUES ('ca_sha256', $1)
			ON CONFLICT (key) DO UPDATE SET key = EXCLUDED.key RETURNING value`, want).Scan(&got)
	}
	if err != nil {
		return fmt.Errorf("store %q: reading its CA: %w", s.url, err)
	}
	if got != want {
		return fmt.Errorf("%w: %q holds the records of the CA whose certificate has SHA-256 %s, not of this one (%s)", store.ErrForeignStore, s.url, got, want)
	}
	return nil
}

// retryable reports whether err is a serialization failure or a deadlock,
// which PostgreSQL asks the client to retry.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// isUniqueViolation reports whether err is SQLSTATE 23505.
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// write runs fn in a serializable transaction, retrying it when it fails
// for serialization, at most MaxAttempts times with a growing pause.
// While the handle holds the CA lock, the transaction first checks that
// the lock is still held (see lock.go); once it is lost, write fails
// with store.ErrStoreLockLost without a round trip, and never retries.
func (s *Store) write(what string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	ls := s.held.Load()
	if ls != nil && ls.lost.Load() {
		return fmt.Errorf("%s in %q: %w", what, s.url, ls.lostError())
	}
	var err error
	for attempt := range MaxAttempts {
		err = s.writeOnce(attempt, ls, fn)
		if !retryable(err) {
			break
		}
		s.retries.Add(1)
		time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
	}
	err = ls.lockLost(err)
	if retryable(err) {
		return fmt.Errorf("%s in %q: still failing for serialization after %d attempts: %w", what, s.url, MaxAttempts, err)
	}
	if err != nil {
		return fmt.Errorf("%s in %q: %w", what, s.url, err)
	}
	return nil
}

func (s *Store) writeOnce(attempt int, ls *lockSession, fn func(ctx context.Context, tx pgx.Tx) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.Serializable}, func(tx pgx.Tx) error {
		var g *guardTx
		if ls != nil {
			g = &guardTx{Tx: tx, ls: ls}
			tx = g
		}
		if err := fn(ctx, tx); err != nil {
			return err
		}
		if s.beforeCommit != nil {
			if err := s.beforeCommit(ctx, tx, attempt); err != nil {
				return err
			}
		}
		if g != nil {
			return g.guard(ctx)
		}
		return nil
	})
}

// Records.

// committedRow is a store.Reservation of the PostgreSQL store: the pending
// row is committed; completing it replaces the row.
type committedRow struct{}

func (committedRow) Release() {}

// Reserve commits the pending row; the table's index on name indexes it.
func (s *Store) Reserve(r *store.Record) (store.Reservation, error) {
	err := s.write("reserving serial "+r.Serial, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, insertRecord, r.Serial, r.Name, string(r.Status), r.IssuedAt, string(store.EncodeRecord(r)))
		return err
	})
	if isUniqueViolation(err) {
		return nil, fmt.Errorf("serial %s: %w", r.Serial, fs.ErrExist)
	}
	if err != nil {
		return nil, err
	}
	return committedRow{}, nil
}

// Complete replaces the pending row.
func (s *Store) Complete(_ store.Reservation, r *store.Record) error { return s.PutRecord(r) }

// CompleteGroup replaces the pending rows in one transaction.
func (s *Store) CompleteGroup(_ []store.Reservation, rs []*store.Record) error {
	return s.putRecords(rs)
}

// UpdateRecord is PutRecord: a commit is what makes a row visible.
func (s *Store) UpdateRecord(r *store.Record) error { return s.PutRecord(r) }

// PutRecord replaces the row of r.
func (s *Store) PutRecord(r *store.Record) error {
	return s.write("writing record "+r.Serial, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO minica_records (serial, name, status, issued_at, data) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (serial) DO UPDATE SET name = EXCLUDED.name, status = EXCLUDED.status, issued_at = EXCLUDED.issued_at, data = EXCLUDED.data`,
			r.Serial, r.Name, string(r.Status), r.IssuedAt, string(store.EncodeRecord(r)))
		return err
	})
}

func (s *Store) putRecords(rs []*store.Record) error {
	return s.write(fmt.Sprintf("writing %d records", len(rs)), func(ctx context.Context, tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, r := range rs {
			queueUpdateRecord(b, r)
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

// queueUpdateRecord queues the replacement of an existing record.
func queueUpdateRecord(b *pgx.Batch, r *store.Record) {
	b.Queue(`UPDATE minica_records SET name = $2, status = $3, issued_at = $4, data = $5 WHERE serial = $1`,
		r.Serial, r.Name, string(r.Status), r.IssuedAt, string(store.EncodeRecord(r)))
}

// decode decodes a record's data, checking it as decodeRecord does.
func (s *Store) decode(serial, data string) (*store.Record, error) {
	r, err := recordjson.Decode([]byte(data))
	if err == nil && r.Serial != serial {
		err = fmt.Errorf("serial %q does not match the row's %q", r.Serial, serial)
	}
	if err == nil && store.ValidateName(r.Name) != nil {
		err = fmt.Errorf("invalid name %q", r.Name)
	}
	if err != nil {
		return nil, &store.CorruptRecordError{File: s.url + " record " + serial, Serial: serial, Err: err}
	}
	return r, nil
}

// Record reads the row of serial.
func (s *Store) Record(serial string) (*store.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var data string
	err := s.pool.QueryRow(ctx, "SELECT data FROM minica_records WHERE serial = $1", serial).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("serial %s: %w", serial, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading record %s from %q: %w", serial, s.url, err)
	}
	return s.decode(serial, data)
}

// RecordsByName reads the rows of name.
func (s *Store) RecordsByName(name string) ([]*store.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT serial, data FROM minica_records WHERE name = $1 AND status <> 'void' ORDER BY issued_at, serial`, name)
	if err != nil {
		return nil, fmt.Errorf("reading the records of %q from %q: %w", name, s.url, err)
	}
	defer rows.Close()
	var recs []*store.Record
	for rows.Next() {
		var serial, data string
		if err := rows.Scan(&serial, &data); err != nil {
			return nil, fmt.Errorf("reading the records of %q from %q: %w", name, s.url, err)
		}
		r, err := s.decode(serial, data)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the records of %q from %q: %w", name, s.url, err)
	}
	store.SortByIssued(recs) // timestamptz keeps microseconds: the same order as the file store's
	return recs, nil
}

// Records streams the rows in serial order: pgx reads them as they come,
// so a million records take constant memory.
func (s *Store) Records() iter.Seq2[*store.Record, error] {
	return streamRows(s, "records", "SELECT serial, data FROM minica_records ORDER BY serial", s.decode)
}

// RecordParts is Records in one part: the rows come in one stream.
func (s *Store) RecordParts() ([]iter.Seq2[*store.Record, error], error) {
	return []iter.Seq2[*store.Record, error]{s.Records()}, nil
}

// streamRows runs query, whose rows are (key, data) pairs, and yields each
// decoded as it arrives; what names the rows in errors.
func streamRows[T any](s *Store, what, query string, decode func(key, data string) (T, error), args ...any) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		fail := func(err error) { yield(zero, fmt.Errorf("listing the %s of %q: %w", what, s.url, err)) }
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rows, err := s.pool.Query(ctx, query, args...)
		if err != nil {
			fail(err)
			return
		}
		defer rows.Close()
		for rows.Next() {
			var key, data string
			if err := rows.Scan(&key, &data); err != nil {
				fail(err)
				return
			}
			if !yield(decode(key, data)) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			fail(err)
		}
	}
}

// The revocation log.

// nullTime is t, or NULL for the zero time.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// AppendRevocations inserts the events in one transaction.
func (s *Store) AppendRevocations(events ...store.RevEvent) error {
	return s.write("appending to the revocation log", func(ctx context.Context, tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, ev := range events {
			queueRevEvent(b, ev)
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

// queueRevEvent queues the append of a revocation event.
func queueRevEvent(b *pgx.Batch, ev store.RevEvent) {
	b.Queue(`INSERT INTO minica_revocations (serial, revoked_at, reason, not_after, lifted) VALUES ($1, $2, $3, $4, $5)`,
		ev.Serial, nullTime(ev.RevokedAt), ev.Reason, nullTime(ev.NotAfter), ev.Lifted)
}

// RevokeRecords inserts the events and replaces the records in one
// transaction.
func (s *Store) RevokeRecords(rs []*store.Record) error {
	return s.write(fmt.Sprintf("revoking %d certificates", len(rs)), func(ctx context.Context, tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, r := range rs {
			queueRevEvent(b, store.EventOf(r))
			queueUpdateRecord(b, r)
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

// LatestRevocations reads the latest row of every serial.
func (s *Store) LatestRevocations() ([]store.LogEvent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT ON (serial) serial, revoked_at, reason, not_after, lifted
		FROM minica_revocations ORDER BY serial, id DESC`)
	if err != nil {
		return nil, fmt.Errorf("reading the revocation log of %q: %w", s.url, err)
	}
	defer rows.Close()
	var out []store.LogEvent
	for rows.Next() {
		var je store.RevEvent
		var at, notAfter *time.Time
		if err := rows.Scan(&je.Serial, &at, &je.Reason, &notAfter, &je.Lifted); err != nil {
			return nil, fmt.Errorf("reading the revocation log of %q: %w", s.url, err)
		}
		if at != nil {
			je.RevokedAt = at.UTC()
		}
		if notAfter != nil {
			je.NotAfter = notAfter.UTC()
		}
		ev, err := store.CompactEvent(je)
		if err != nil {
			return nil, fmt.Errorf("%w %q: serial %s: %w", store.ErrCorruptRevocationLog, s.url, je.Serial, err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the revocation log of %q: %w", s.url, err)
	}
	return out, nil
}

// RevocationStamp is the highest event ID.
func (s *Store) RevocationStamp() (store.FileStamp, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var id int64
	if err := s.pool.QueryRow(ctx, "SELECT coalesce(max(id), 0) FROM minica_revocations").Scan(&id); err != nil {
		return store.FileStamp{}, fmt.Errorf("reading the revocation log of %q: %w", s.url, err)
	}
	return store.FileStamp{Ino: uint64(id)}, nil
}

// The CRL.

// LastCRLNumber reads the last number reserved.
func (s *Store) LastCRLNumber() (*big.Int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var text string
	if err := s.pool.QueryRow(ctx, "SELECT last_number::text FROM minica_crl WHERE id = 1").Scan(&text); err != nil {
		return nil, fmt.Errorf("reading the CRL number from %q: %w", s.url, err)
	}
	last := new(big.Int)
	last.SetString(text, 10)
	return last, nil
}

// NextCRLNumber reserves the number under SELECT ... FOR UPDATE of the one
// row of minica_crl, as the file store's NextCRLNumber computes it.
func (s *Store) NextCRLNumber(now time.Time) (*big.Int, error) {
	var next *big.Int
	err := s.write("reserving a CRL number", func(ctx context.Context, tx pgx.Tx) error {
		var lastText, publishedText string
		if err := tx.QueryRow(ctx, "SELECT last_number::text, coalesce(number, 0)::text FROM minica_crl WHERE id = 1 FOR UPDATE").Scan(&lastText, &publishedText); err != nil {
			return err
		}
		last, ok1 := new(big.Int).SetString(lastText, 10)
		published, ok2 := new(big.Int).SetString(publishedText, 10)
		if !ok1 || !ok2 {
			return fmt.Errorf("corrupt CRL number %q", lastText)
		}
		if published.Cmp(last) > 0 {
			last = published
		}
		next = last.Add(last, big.NewInt(1))
		if fromClock := big.NewInt(now.UnixMilli()); fromClock.Cmp(next) > 0 {
			next = fromClock
		}
		_, err := tx.Exec(ctx, "UPDATE minica_crl SET last_number = $1::numeric WHERE id = 1", next.String())
		return err
	})
	return next, err
}

// SaveCRL stores der as the current CRL unless a higher number is current,
// notifying channel minica_crl with the number, and then writes the
// published copy.
func (s *Store) SaveCRL(number *big.Int, der []byte) (bool, error) {
	return s.saveThenCopy(saveComplete, number, der, store.WriteCRLCopy)
}

// crash calls the test hook crashed, if set, after file was written.
func (s *Store) crash(file string) error {
	if s.crashed == nil {
		return nil
	}
	return s.crashed(file)
}

// A crlSave is how one kind of CRL is saved in the row of minica_crl: the
// statement, which takes the number ($1) and the DER ($2) and updates the
// row only where it saves, and the payload of the notification, which
// takes the number. A complete CRL replaces one of a lower number; a delta
// replaces one of a lower or the same number.
type crlSave struct {
	what, update, payload string
}

var (
	saveComplete = crlSave{"saving CRL ", `UPDATE minica_crl SET number = $1::numeric, der = $2, version = version + 1
			WHERE id = 1 AND (number IS NULL OR number < $1::numeric)`, "%s"}
	saveDelta = crlSave{"saving delta CRL ", `UPDATE minica_crl SET delta_number = $1::numeric, delta_der = $2, delta_version = delta_version + 1
			WHERE id = 1 AND (delta_number IS NULL OR delta_number <= $1::numeric)`, "delta %s"}
)

// saveThenCopy saves der as k says, then, when it was saved, calls the
// crash hook ("store") and writes the published copy with writeCopy.
func (s *Store) saveThenCopy(k crlSave, number *big.Int, der []byte, writeCopy func(*cadir.Dir, []byte, func(string) error) error) (bool, error) {
	saved, err := s.saveCRL(k, number, der)
	if err == nil {
		err = s.crash("store")
	}
	if err != nil || !saved {
		return false, err
	}
	return true, writeCopy(s.dir, der, s.crash)
}

// saveCRL runs k's statement and, when it saved, notifies notifyChannel,
// in one transaction.
func (s *Store) saveCRL(k crlSave, number *big.Int, der []byte) (bool, error) {
	saved := false
	err := s.write(k.what+number.String(), func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, k.update, number.String(), der)
		if err != nil {
			return err
		}
		if saved = tag.RowsAffected() == 1; !saved {
			return nil
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", notifyChannel, fmt.Sprintf(k.payload, number))
		return err
	})
	return saved && err == nil, err
}

// CRL reads the current CRL; fs.ErrNotExist when none was saved.
func (s *Store) CRL() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var der []byte
	if err := s.pool.QueryRow(ctx, "SELECT der FROM minica_crl WHERE id = 1").Scan(&der); err != nil {
		return nil, fmt.Errorf("reading the CRL from %q: %w", s.url, err)
	}
	if der == nil {
		return nil, fs.ErrNotExist
	}
	return der, nil
}

// ReadCRL reads the current CRL with the stamp of its version.
func (s *Store) ReadCRL() (*store.PublishedCRL, error) {
	stamp, err := s.CRLStamp()
	if err != nil {
		return nil, err
	}
	crl, der, err := store.LoadCRL(s, s.cert)
	if err != nil {
		return nil, err
	}
	return &store.PublishedCRL{CRL: crl, DER: der, Stamp: stamp}, nil
}

// CRLName is the store's URL.
func (s *Store) CRLName() string { return s.url }

// CRLApart is true: the database holds the current CRL, the CA directory
// its published copy.
func (s *Store) CRLApart() bool { return true }

// CRLStamp is the version of the current CRL's row.
func (s *Store) CRLStamp() (store.FileStamp, error) {
	return s.crlStamp("SELECT version, length(der) FROM minica_crl WHERE id = 1", "the CRL", store.ErrNoCRL)
}

// crlStamp reads the stamp of a CRL in the row of minica_crl: query
// selects its version and size, a NULL size when there is none (missing).
func (s *Store) crlStamp(query, what string, missing error) (store.FileStamp, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var version int64
	var size *int64
	if err := s.pool.QueryRow(ctx, query).Scan(&version, &size); err != nil {
		return store.FileStamp{}, fmt.Errorf("reading %s from %q: %w", what, s.url, err)
	}
	if size == nil {
		return store.FileStamp{}, fmt.Errorf("%w in %q", missing, s.url)
	}
	return store.FileStamp{Ino: uint64(version), Size: *size}, nil
}

// Enrollments.

// CreateEnrollment inserts the row of a new enrollment.
func (s *Store) CreateEnrollment(e store.EnrollmentData) error {
	err := s.write("writing enrollment "+e.ID, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO minica_enrollments (id, name, data) VALUES ($1, $2, $3)", e.ID, e.Name, string(e.Data))
		return err
	})
	if isUniqueViolation(err) {
		return fmt.Errorf("enrollment %s: %w", e.ID, fs.ErrExist)
	}
	return err
}

// PutEnrollment replaces the row of an enrollment.
func (s *Store) PutEnrollment(e store.EnrollmentData) error {
	return s.write("writing enrollment "+e.ID, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO minica_enrollments (id, name, data) VALUES ($1, $2, $3)
			ON CONFLICT (id) DO UPDATE SET data = EXCLUDED.data`, e.ID, e.Name, string(e.Data))
		return err
	})
}

// stored names the row of an enrollment.
func (s *Store) stored(id, data string) (store.EnrollmentData, error) {
	return store.EnrollmentData{ID: id, Data: []byte(data), Where: fmt.Sprintf("%s in %q", id, s.url)}, nil
}

// Enrollment reads the row of id.
func (s *Store) Enrollment(id string) (store.EnrollmentData, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var data string
	err := s.pool.QueryRow(ctx, "SELECT data FROM minica_enrollments WHERE id = $1", id).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.EnrollmentData{}, fmt.Errorf("%w: %s", store.ErrEnrollmentUnknown, id)
	}
	if err != nil {
		return store.EnrollmentData{}, fmt.Errorf("reading enrollment %s from %q: %w", id, s.url, err)
	}
	return s.stored(id, data)
}

// EnrollmentByName reads the latest row of name.
func (s *Store) EnrollmentByName(name string) (store.EnrollmentData, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var id, data string
	err := s.pool.QueryRow(ctx, "SELECT id, data FROM minica_enrollments WHERE name = $1 ORDER BY seq DESC LIMIT 1", name).Scan(&id, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.EnrollmentData{}, fmt.Errorf("%w for %q", store.ErrEnrollmentUnknown, name)
	}
	if err != nil {
		return store.EnrollmentData{}, fmt.Errorf("reading enrollment index of %q: %w", name, err)
	}
	return s.stored(id, data)
}

// Enrollments streams the rows in ID order.
func (s *Store) Enrollments() iter.Seq2[store.EnrollmentData, error] {
	return streamRows(s, "enrollments", "SELECT id, data FROM minica_enrollments ORDER BY id", s.stored)
}
