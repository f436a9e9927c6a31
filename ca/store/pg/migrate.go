package pg

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"minica/ca/store"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// migrations are the schema's versions, NNNN_what.sql, applied in order;
// the Nth file makes schema version N. A released file never changes: a
// change of the schema is a new file.
//
//go:embed schema/*.sql
var migrations embed.FS

// SchemaVersion is the schema version this binary reads and writes.
var SchemaVersion = len(migrationFiles())

// ErrSchema is matched by every SchemaError.
var ErrSchema = errors.New("store schema mismatch")

// SchemaError is returned when the store's schema is not this binary's:
// Found is 0 for a database never migrated, below SchemaVersion for one
// that needs `minica store migrate`, above it for one migrated by a newer
// minica, which this binary refuses to touch.
type SchemaError struct {
	Store string
	Found int
}

func (e *SchemaError) Error() string {
	switch {
	case e.Found == 0:
		return fmt.Sprintf("the store %q has no minica schema", e.Store)
	case e.Found < SchemaVersion:
		return fmt.Sprintf("the store %q has schema version %d, older than this minica's %d", e.Store, e.Found, SchemaVersion)
	default:
		return fmt.Sprintf("the store %q has schema version %d, newer than this minica knows (%d)", e.Store, e.Found, SchemaVersion)
	}
}

// Unwrap makes errors.Is(err, ErrSchema) true.
func (e *SchemaError) Unwrap() error { return ErrSchema }

func migrationFiles() []string {
	names, _ := fs.Glob(migrations, "schema/*.sql")
	slices.Sort(names)
	return names
}

// schemaVersion returns the store's schema version, 0 when it has none.
func (s *Store) schemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM minica_schema").Scan(&v)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the schema version of %q: %w", s.url, err)
	}
	return v, nil
}

// Migrate brings the schema of the PostgreSQL store at url to
// SchemaVersion, in one transaction under an advisory lock, so that two
// migrations at once apply each version once. It returns the versions
// before and after; a schema newer than this binary's is refused with a
// *SchemaError and left alone.
func Migrate(url string) (from, to int, err error) {
	if !IsURL(url) {
		return 0, 0, fmt.Errorf("%w %s: store migrate takes a postgres:// URL", store.ErrBadStore, strconv.QuoteToASCII(url))
	}
	s, err := connect(url)
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	return s.migrate()
}

func (s *Store) migrate() (from, to int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*opTimeout)
	defer cancel()
	var standby bool
	if err := s.pool.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&standby); err != nil {
		return 0, 0, fmt.Errorf("store %q: %w", s.url, err)
	}
	if standby {
		return 0, 0, fmt.Errorf("%w: %q is a standby server in recovery", ErrReadOnlyStore, s.url)
	}
	if err := s.checkWritable(ctx); err != nil {
		return 0, 0, err
	}
	files := migrationFiles()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, 0)", LockClass); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS minica_schema (
			version    int PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM minica_schema").Scan(&from); err != nil {
			return err
		}
		if from > len(files) {
			return &SchemaError{Store: s.url, Found: from}
		}
		for i, name := range files[from:] {
			v := from + i + 1
			if want := fmt.Sprintf("%04d_", v); !strings.HasPrefix(path.Base(name), want) {
				return fmt.Errorf("migration %s: want a name starting %s", name, want)
			}
			sql, err := migrations.ReadFile(name)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return fmt.Errorf("applying %s: %w", path.Base(name), err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO minica_schema (version, name) VALUES ($1, $2)", v, path.Base(name)); err != nil {
				return err
			}
		}
		return nil
	})
	var se *SchemaError
	if errors.As(err, &se) {
		return from, from, err
	}
	if err != nil {
		return from, from, fmt.Errorf("migrating the store %q: %w", s.url, err)
	}
	return from, len(files), nil
}
