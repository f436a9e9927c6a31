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

	"minica/revoke"
)

// database is the storage seam: the issuance database (records, the
// revocation log, the CRL number and current CRL, enrollments, renewal
// links) of one CA. Two engines implement it: fileStore, the CA
// directory's own files (filestore*.go), and pgStore, a PostgreSQL
// database (pgstore*.go). The CA holds one of them and never asks which:
// what differs between them is in their methods. No other package knows
// which store is in use: they call CA's methods.
//
// The CA certificate, its key, chain.pem, settings.json and the issued
// certificates' files (certs/) always stay in the CA directory, and so do
// crl.pem and crl.der, the published copy of the current CRL (for web
// servers, the proxy and the configurations that read them), which the
// engines write when they save a CRL.
type database interface {
	// String names the store in messages: the CA directory's path, or
	// the URL (without a password).
	String() string
	Close() error
	// Lock takes the exclusive lock that every mutation holds, across
	// every process of the CA, waiting at most timeout.
	Lock(timeout time.Duration) (unlock func(), err error)

	recordStore
	revocationLog
	crlStore
	enrollmentStore
	coordination
	maintenance
}

// reservation is a serial reserved by recordStore.Reserve, opaque to the
// CA: only the engine that made it completes it.
type reservation interface {
	// Release lets go of what the reservation holds without completing
	// it: the record stays pending, for Check to settle.
	Release()
}

// recordStore keeps the records, one per serial ever reserved.
type recordStore interface {
	// Reserve creates r, the pending record of a new serial, before
	// anything is signed, and indexes it under its name; a taken serial
	// gives an error matching fs.ErrExist.
	Reserve(r *Record) (reservation, error)
	// ReserveGroup is Reserve for several records: all of them or none.
	ReserveGroup(rs []*Record) ([]reservation, error)
	// Complete replaces the reserved record with r (its completed state)
	// and releases the reservation. It need not be durable: Check
	// completes a record again from its synced certificate.
	Complete(res reservation, r *Record) error
	// CompleteGroup is Complete for several reservations.
	CompleteGroup(res []reservation, rs []*Record) error
	// PutRecord replaces an existing record durably (void, revocation
	// state, a rebuilt record).
	PutRecord(r *Record) error
	// UpdateRecord records a new state of an existing record that Check
	// can restore (the renewal link), at the least cost the engine has.
	UpdateRecord(r *Record) error
	// Record returns the record of a 32-digit serial, or an error matching
	// ErrNotFound.
	Record(serial string) (*Record, error)
	// RecordsByName returns name's records but the void ones, oldest first.
	RecordsByName(name string) ([]*Record, error)
	// Records streams every record in serial order; a record that does
	// not decode is yielded as a *CorruptRecordError.
	Records() iter.Seq2[*Record, error]
	// RecordParts splits Records into parts that may be read
	// concurrently, each in serial order, the parts in serial order.
	RecordParts() ([]iter.Seq2[*Record, error], error)
}

// revocationLog keeps the revocation events, written before the records
// they change and read to build the CRL.
type revocationLog interface {
	// AppendRevocations appends events durably, all or none.
	AppendRevocations(events ...revEvent) error
	// RevokeRecords appends the revocation event of every record (see
	// eventOf), then replaces the records: a crash keeps the events.
	RevokeRecords(rs []*Record) error
	// LatestRevocations returns the latest event of every serial, in
	// serial order.
	LatestRevocations() ([]logEvent, error)
	// RevocationStamp changes whenever an event is appended.
	RevocationStamp() (FileStamp, error)
}

// crlStore keeps the CRL number and the current CRL, and writes the
// published copy of the current CRL (crl.pem, then crl.der) into the CA
// directory.
type crlStore interface {
	// LastCRLNumber returns the last CRL number reserved (0 for none).
	LastCRLNumber() (*big.Int, error)
	// NextCRLNumber reserves, durably, the number of a CRL signed at now:
	// strictly greater than every number reserved or published before.
	NextCRLNumber(now time.Time) (*big.Int, error)
	// SaveCRL makes der (numbered number) the current CRL and writes the
	// published copy, unless a CRL with a higher number is current
	// already; saved tells which.
	SaveCRL(number *big.Int, der []byte) (saved bool, err error)
	// CRL returns the current CRL's DER, or an error matching
	// fs.ErrNotExist when none was published.
	CRL() ([]byte, error)
	// ReadCRL reads and verifies the current CRL with the version
	// CRLStamp names, refusing what is not a regular file
	// (ErrNotRegular) where it is a file; a missing CRL gives an error
	// matching ErrNoCRL.
	ReadCRL() (*PublishedCRL, error)
	// CRLStamp changes whenever the current CRL does; it gives an error
	// matching ErrNoCRL when there is none.
	CRLStamp() (FileStamp, error)
	// CRLName names the current CRL in messages.
	CRLName() string
}

// enrollmentStore keeps enrollments as the CA encodes them.
type enrollmentStore interface {
	// CreateEnrollment writes a new enrollment durably; a taken ID gives
	// an error matching fs.ErrExist.
	CreateEnrollment(e storedEnrollment) error
	PutEnrollment(e storedEnrollment) error
	// Enrollment returns the enrollment of an ID; an unknown one gives an
	// error matching fs.ErrNotExist.
	Enrollment(id string) (storedEnrollment, error)
	// EnrollmentByName returns name's latest enrollment; a name without
	// one gives an error matching fs.ErrNotExist.
	EnrollmentByName(name string) (storedEnrollment, error)
	// Enrollments streams every enrollment in ID order.
	Enrollments() iter.Seq2[storedEnrollment, error]
}

// storedEnrollment is an enrollment as an engine keeps it: the CA encodes
// and decodes Data; Where names it in messages.
type storedEnrollment struct {
	ID, Name string
	Data     []byte
	Where    string
}

// crlCopy is a file of the published copy of the current CRL.
type crlCopy struct {
	Name string // its path, for messages
	Data []byte
}

// coordination is what the processes of one CA share beyond the lock:
// the CRL signer's lease, CRL notifications and the registration of
// running serves. On an engine that one host's processes share through
// the CA directory, there is nothing to share beyond the lock.
type coordination interface {
	// HoldCRLSigner reports whether this handle is the one of the CA's
	// processes that re-signs the CRL, taking the lease when it is free.
	HoldCRLSigner() (bool, error)
	ReleaseCRLSigner()
	// CRLNotifications returns a channel that receives a value soon after
	// any process saves a CRL, or nil where readers poll.
	CRLNotifications(ctx context.Context) <-chan struct{}
	// HoldServing registers a running serve in the store, or takes back
	// a registration that was lost (retaken).
	HoldServing() (retaken bool, err error)
	// ExcludeServing holds off every serve registration of the store, or
	// fails with a *ServeRunningError while one is held.
	ExcludeServing() (release func(), err error)
	// Ping reports whether the store answers.
	Ping() error
}

// maintenance is what Check and CopyStore ask of an engine: repairs of
// what only the engine knows, and the copy of a whole database.
type maintenance interface {
	// Repair repairs what interrupted writes of the engine's own state
	// left, calling fixed for each repair and problem for what it cannot
	// repair.
	Repair(fixed, problem func(string)) error
	// Reindex rebuilds what the engine derives from the records.
	Reindex() error
	// DropUnreadable settles the record that corrupt names, which no
	// certificate file can rebuild.
	DropUnreadable(corrupt *CorruptRecordError, fixed, problem func(string)) error
	// CheckCRL makes the published copy agree with the current CRL and
	// returns the current CRL, or nil (a problem) when there is none.
	CheckCRL(fixed, problem func(string)) (*revoke.CRL, error)
	// PublishedCopies returns the copies of the current CRL that the
	// engine keeps apart from its database, which a database restored
	// from a backup may lag behind; none where the copy is the database.
	PublishedCopies() []crlCopy
	// RaiseCRLNumber makes the next CRL number greater than n where the
	// engine would not already, reporting whether it did.
	RaiseCRLNumber(n *big.Int) (bool, error)
	// AdoptPublishedCRL makes the published copy the current CRL: what a
	// new CA published before it had a database.
	AdoptPublishedCRL() error
	// Load writes d, the whole database of another store, into this one,
	// which must hold no record, revocation or enrollment
	// (ErrStoreNotEmpty); it returns how many records it wrote.
	Load(d *storeData) (int, error)
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

// useStore connects c to store ("" or "file": the CA directory, which
// openDir connected it to).
func (c *CA) useStore(store string) error {
	if err := CheckStore(store); err != nil {
		return fmt.Errorf("CA settings %q: %w", c.dir.Join(settingsFile), err)
	}
	db, err := c.openStore(store)
	if err != nil {
		return err
	}
	c.db.Close()
	c.db, c.storeName = db, store
	return nil
}

// openStore opens the engine of a store that CheckStore accepted, for
// this CA: the one place that maps a store's name to its engine.
func (c *CA) openStore(store string) (database, error) {
	if IsPostgresStore(store) {
		s, err := openPGStore(store, c.Cert, c.dir)
		if err != nil {
			return nil, err
		}
		s.crashed = c.crashed
		return s, nil
	}
	return c.fileStore(), nil
}

// prepareInitStore readies the store of a new CA before anything is
// written in its directory (see InitOptions.Store).
func prepareInitStore(store string) error {
	if err := CheckStore(store); err != nil {
		return err
	}
	if IsPostgresStore(store) {
		return preparePGStore(store)
	}
	return nil
}

// fileStore returns the file engine of the CA directory, its test hooks
// set from c's.
func (c *CA) fileStore() *fileStore {
	s := newFileStore(c.dir, c.Cert)
	s.wrapLog = func(f logFile) logFile {
		if c.wrapLog != nil {
			return c.wrapLog(f)
		}
		return f
	}
	s.crashed = c.crashed
	return s
}

// Store names the store in use: "file" or the PostgreSQL URL.
func (c *CA) Store() string {
	if c.storeName == "" {
		return StoreFile
	}
	return c.storeName
}

// PingStore reports whether the store answers: on PostgreSQL a round trip
// to the server, bounded by a few seconds; on the file store (the CA
// directory, which the handle holds open) always nil.
func (c *CA) PingStore() error { return c.db.Ping() }

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
