package ca

import (
	"errors"
	"fmt"
	"minica/ca/store"
	filestore "minica/ca/store/file"
	"net/url"
	"strings"
)

// The CA's issuance database is a store.Store: the file engine (the CA
// directory's own files) or the PostgreSQL engine, chosen once by
// openStore; the CA never asks which it holds.
type (
	database         = store.Store
	reservation      = store.Reservation
	storedEnrollment = store.EnrollmentData
	crlCopy          = store.CRLCopy
	storeData        = store.Contents
)

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
func (c *CA) fileStore() *filestore.Store {
	wrapLog := func(f filestore.LogFile) filestore.LogFile {
		if c.wrapLog != nil {
			return c.wrapLog(f)
		}
		return f
	}
	return filestore.New(c.dir, c.Cert, filestore.Options{WrapLog: wrapLog, Crashed: c.crashed})
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
