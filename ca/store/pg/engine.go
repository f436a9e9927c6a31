package pg

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"minica/ca/store"
	"minica/internal/cadir"
)

// ErrPassword is returned for a store URL that carries a password:
// arguments and settings files are readable by others, so the password of
// the database comes from libpq's usual sources instead.
var ErrPassword = errors.New("the store URL holds a password")

// Engine opens PostgreSQL stores, named by postgres:// URLs.
type Engine struct{}

var _ store.Engine = Engine{}

// IsURL reports whether s names a PostgreSQL store.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// CheckURL validates a PostgreSQL store URL: libpq's form (sslmode and
// service included), without a password.
func CheckURL(s string) error {
	if !IsURL(s) {
		return fmt.Errorf("%w %s: want a postgres:// URL", store.ErrBadStore, strconv.QuoteToASCII(s))
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%w %s: %v", store.ErrBadStore, strconv.QuoteToASCII(s), err)
	}
	if _, has := u.User.Password(); has || u.Query().Has("password") {
		return fmt.Errorf("%w: give it through ~/.pgpass (or PGPASSFILE), a service file (?service=NAME) or PGPASSWORD, never in an argument or the settings", ErrPassword)
	}
	return nil
}

// Handles reports whether name is a postgres:// URL.
func (Engine) Handles(name string) bool { return IsURL(name) }

// Kind describes the engine's URLs.
func (Engine) Kind() string { return "a postgres:// URL" }

// Check validates name (see CheckURL).
func (Engine) Check(name string) error { return CheckURL(name) }

// Prepare migrates the store and checks that it belongs to no CA yet.
func (Engine) Prepare(name string) error { return Prepare(name) }

// Migrate migrates the store (see Migrate).
func (Engine) Migrate(name string) (from, to int, err error) { return Migrate(name) }

// Open opens the store (see Open).
func (Engine) Open(name string, cert *x509.Certificate, dir *cadir.Dir, o store.OpenOptions) (store.Store, error) {
	s, err := Open(name, cert, dir)
	if err != nil {
		return nil, err
	}
	s.crashed = o.Crashed
	return s, nil
}
