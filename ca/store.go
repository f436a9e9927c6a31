package ca

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/big"
	"net/url"
	"strings"
	"time"
)

// database is the storage seam: the issuance database (records, the
// revocation log, the CRL number and current CRL, enrollments, renewal
// links) when it is not kept in the CA directory's own files. Every
// function of package ca that touches the database asks c.db first; a nil
// c.db is the file store, whose code (record.go, nameindex.go, revlog.go,
// crl.go, published.go, enroll.go, lock.go) is unchanged. No other package
// knows which store is in use: they call CA's methods.
//
// The CA certificate, its key, chain.pem, settings.json and the issued
// certificates' files (certs/) always stay in the CA directory, and so do
// crl.pem and crl.der as the published copy of the database's current CRL
// (for web servers, the proxy and the configurations that read them).
type database interface {
	// String names the store for messages (a URL without a password).
	String() string
	close() error
	// lock takes the exclusive lock that every mutation holds (what the
	// lock file is in the file store), across every process of the CA.
	lock(timeout time.Duration) (unlock func(), err error)

	// reserve creates the pending record of a new serial, committed
	// before anything is signed; a taken serial gives an error matching
	// fs.ErrExist.
	reserve(r *Record) error
	// putRecord replaces an existing record (completion, void, revocation
	// state, renewal link) durably.
	putRecord(r *Record) error
	// putRecords is putRecord for several records, all or none.
	putRecords(rs []*Record) error
	// record returns the record of a 32-digit serial, or ErrNotFound.
	record(serial string) (*Record, error)
	// recordsByName returns name's records but the void ones, oldest first.
	recordsByName(name string) ([]*Record, error)
	// records streams every record in serial order.
	records() iter.Seq2[*Record, error]

	// appendRevEvent appends a revocation event durably.
	appendRevEvent(ev revEvent) error
	// revokeRecords appends the revocation event of every record (see
	// eventOf) and replaces the records, all in one transaction.
	revokeRecords(rs []*Record) error
	// latestLogEvents returns the latest event of every serial, in serial
	// order.
	latestLogEvents() ([]logEvent, error)
	// revocationStamp changes whenever an event is appended.
	revocationStamp() (FileStamp, error)

	// nextCRLNumber reserves, durably, the number of a CRL signed at now:
	// strictly greater than every number any writer reserved before.
	nextCRLNumber(now time.Time) (*big.Int, error)
	// saveCRL makes der (numbered number) the current CRL, unless a CRL
	// with a higher number is current already; saved tells which.
	saveCRL(number *big.Int, der []byte) (saved bool, err error)
	// loadCRL returns the current CRL's DER, nil when none was published.
	loadCRL() ([]byte, error)
	// crlStamp changes whenever the current CRL does; it gives an error
	// matching ErrNoCRL when there is none.
	crlStamp() (FileStamp, error)

	// createEnrollment writes a new enrollment; a taken ID gives an error
	// matching fs.ErrExist.
	createEnrollment(e *Enrollment) error
	putEnrollment(e *Enrollment) error
	// enrollment returns the enrollment of an ID, or ErrEnrollmentUnknown.
	enrollment(id string) (*Enrollment, error)
	// enrollmentByName returns name's latest enrollment.
	enrollmentByName(name string) (*Enrollment, error)
	enrollments() iter.Seq2[*Enrollment, error]
}

// StoreFile names the file store (the CA directory's own files) where a
// store is chosen: --store file, MINICA_STORE=file, or no store in the
// settings.
const StoreFile = "file"

// ErrStorePassword is returned for a store URL that carries a password:
// arguments and settings files are readable by others, so the password of
// the database comes from libpq's usual sources instead.
var ErrStorePassword = errors.New("the store URL holds a password")

// ErrBadStore is returned for a store that is neither a PostgreSQL URL nor
// "file".
var ErrBadStore = errors.New("invalid store")

// IsPostgresStore reports whether s names a PostgreSQL store.
func IsPostgresStore(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// CheckStore validates a store as --store, MINICA_STORE and the settings
// give it: "" or "file" for the CA directory, or a postgres:// URL (libpq's
// form, sslmode and service included) without a password.
func CheckStore(s string) error {
	if s == "" || s == StoreFile {
		return nil
	}
	if !IsPostgresStore(s) {
		return fmt.Errorf("%w %s: want a postgres:// URL, or %q for the CA directory's files", ErrBadStore, printable(s), StoreFile)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%w %s: %v", ErrBadStore, printable(s), err)
	}
	if _, has := u.User.Password(); has || u.Query().Has("password") {
		return fmt.Errorf("%w: give it through ~/.pgpass (or PGPASSFILE), a service file (?service=NAME) or PGPASSWORD, never in an argument or the settings", ErrStorePassword)
	}
	return nil
}

// OpenOptions are the inputs of OpenWith.
type OpenOptions struct {
	// Store overrides the store the CA settings name: "file" or a
	// postgres:// URL (see CheckStore); "" keeps the settings' choice.
	Store string
}

// OpenWith is Open with the store chosen by o.
func OpenWith(dir string, o OpenOptions) (*CA, error) {
	if err := CheckStore(o.Store); err != nil {
		return nil, err
	}
	c, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	store := o.Store
	if store == "" {
		store = c.Settings.Store
	}
	if err := c.useStore(store); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// useStore connects c to store ("" or "file": the CA directory).
func (c *CA) useStore(store string) error {
	if err := CheckStore(store); err != nil {
		return fmt.Errorf("CA settings %q: %w", c.dir.Join(settingsFile), err)
	}
	if store == "" || store == StoreFile {
		return nil
	}
	db, err := openPGStore(store, c.Cert)
	if err != nil {
		return err
	}
	c.db = db
	return nil
}

// Store names the store in use: "file" or the PostgreSQL URL.
func (c *CA) Store() string {
	if c.db == nil {
		return StoreFile
	}
	return c.db.String()
}

// PingStore reports whether the store answers: on PostgreSQL a round trip
// to the server, bounded by a few seconds; on the file store (the CA
// directory, which the handle holds open) always nil.
func (c *CA) PingStore() error {
	s, ok := c.db.(*pgStore)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("the store %q does not answer: %w", s.url, err)
	}
	return nil
}

// SetStore records store in the CA settings as the CA's database ("" or
// "file": the directory's files). It moves nothing: copy the database
// first (CopyStore). The caller must hold the lock (see Lock).
func (c *CA) SetStore(store string) error {
	if err := CheckStore(store); err != nil {
		return err
	}
	if store == StoreFile {
		store = ""
	}
	s := c.Settings
	s.Store = store
	return c.saveSettings(s)
}

// SettingsStore returns the store the CA settings name, "" for the files,
// for `minica store migrate` without --store.
func SettingsStore(dir string) (string, error) {
	c, err := openDir(dir)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.Settings.Store, nil
}
