package ca

import (
	"fmt"
	"minica/ca/store"
	filestore "minica/ca/store/file"
	"strings"
)

// The CA's issuance database is a store.Store: the file engine (the CA
// directory's own files) or a store of one of the engines the CA was
// given, chosen once by openStore; the CA never asks which it holds.
type (
	database         = store.Store
	reservation      = store.Reservation
	storedEnrollment = store.EnrollmentData
	storeData        = store.Contents
)

// StoreFile names the file store (the CA directory's own files) where a
// store is chosen: --store file, MINICA_STORE=file, or no store in the
// settings.
const StoreFile = "file"

// ErrBadStore is returned for a store that is neither "file" nor a URL of
// an engine the CA was given.
var ErrBadStore = store.ErrBadStore

// ErrForeignStore is returned when a store holds another CA's records.
var ErrForeignStore = store.ErrForeignStore

// Engine opens the stores of one kind (see store.Engine): the program
// chooses which a CA may use, through OpenOptions and InitOptions.
type Engine = store.Engine

// CheckStore validates a store as --store, MINICA_STORE and the settings
// give it: "" or "file" for the CA directory, or a URL that one of
// engines takes and accepts.
func CheckStore(s string, engines ...Engine) error {
	if s == "" || s == StoreFile {
		return nil
	}
	if e := engineOf(s, engines); e != nil {
		return e.Check(s)
	}
	kinds := make([]string, 0, len(engines)+1)
	for _, e := range engines {
		kinds = append(kinds, e.Kind())
	}
	want := strings.Join(kinds, " or ")
	if want == "" {
		want = "no other store here"
	}
	return fmt.Errorf("%w %s: want %s, or %q for the CA directory's files", ErrBadStore, printable(s), want, StoreFile)
}

// engineOf returns the engine of engines that takes the store s, or nil.
func engineOf(s string, engines []Engine) Engine {
	for _, e := range engines {
		if e.Handles(s) {
			return e
		}
	}
	return nil
}

// OpenOptions are the inputs of OpenWith.
type OpenOptions struct {
	// Store overrides the store the CA settings name: "file" or a URL of
	// one of Engines (see CheckStore); "" keeps the settings' choice.
	Store string
	// Engines are the engines of the stores the CA may use beside its
	// directory's files (PostgreSQL's, say); a CA whose store none of
	// them takes does not open.
	Engines []Engine
}

// OpenWith is Open with the store chosen by o.
func OpenWith(dir string, o OpenOptions) (*CA, error) {
	if err := CheckStore(o.Store, o.Engines...); err != nil {
		return nil, err
	}
	c, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	c.engines = o.Engines
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
	if err := CheckStore(store, c.engines...); err != nil {
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
func (c *CA) openStore(name string) (database, error) {
	if e := engineOf(name, c.engines); e != nil {
		return e.Open(name, c.Cert, c.dir, store.OpenOptions{Crashed: c.crashed})
	}
	return c.fileStore(), nil
}

// prepareInitStore readies the store of a new CA before anything is
// written in its directory (see InitOptions.Store).
func prepareInitStore(name string, engines []Engine) error {
	if err := CheckStore(name, engines...); err != nil {
		return err
	}
	if e := engineOf(name, engines); e != nil {
		return e.Prepare(name)
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

// Store names the store in use: "file" or the store's URL.
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

// StoreCRLApart reports whether the store keeps the current CRL apart
// from its published copy (crl.pem, crl.der): a CRL in the store older
// than the one a process serves then means the store was restored from a
// backup, not that the copy was replayed.
func (c *CA) StoreCRLApart() bool { return c.db.CRLApart() }

// SetStore records store in the CA settings as the CA's database ("" or
// "file": the directory's files). It moves nothing: copy the database
// first (CopyStore). The caller must hold the lock (see Lock).
func (c *CA) SetStore(store string) error {
	if err := CheckStore(store, c.engines...); err != nil {
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
