package store

import (
	"context"
	"iter"
	"math/big"
	"time"

	"minica/revoke"
)

// Store is the issuance database of one CA: records, the revocation log,
// the CRL number and current CRL, enrollments and renewal links. Two
// engines implement it: package file, the CA directory's own files, and
// package pg, a PostgreSQL database. The CA holds one of them and never
// asks which: what differs between them is in their methods. Package
// storetest is the conformance suite every engine passes.
//
// The CA certificate, its key, chain.pem, settings.json and the issued
// certificates' files (certs/) always stay in the CA directory, and so do
// crl.pem and crl.der, the published copy of the current CRL (for web
// servers, the proxy and the configurations that read them), which the
// engines write when they save a CRL.
type Store interface {
	// String names the store in messages: the CA directory's path, or
	// the URL (without a password).
	String() string
	// Close releases what the store holds (connections, leases); a
	// second call does nothing.
	Close() error
	// Lock takes the exclusive lock that every mutation holds, across
	// every process of the CA, waiting at most timeout.
	Lock(timeout time.Duration) (unlock func(), err error)

	RecordStore
	RevocationLog
	CRLStore
	EnrollmentStore
	ACMEStore
	Coordination
	Maintenance
}

// Reservation is a serial reserved by RecordStore.Reserve, opaque to the
// CA: only the engine that made it completes it.
type Reservation interface {
	// Release lets go of what the reservation holds without completing
	// it: the record stays pending, for Check to settle.
	Release()
}

// RecordStore keeps the records, one per serial ever reserved.
type RecordStore interface {
	// Reserve creates r, the pending record of a new serial, before
	// anything is signed, and indexes it under its name; a taken serial
	// gives an error matching fs.ErrExist.
	Reserve(r *Record) (Reservation, error)
	// ReserveGroup is Reserve for several records: all of them or none.
	ReserveGroup(rs []*Record) ([]Reservation, error)
	// Complete replaces the reserved record with r (its completed state)
	// and releases the reservation. It need not be durable: Check
	// completes a record again from its synced certificate.
	Complete(res Reservation, r *Record) error
	// CompleteGroup is Complete for several reservations.
	CompleteGroup(res []Reservation, rs []*Record) error
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

// RevocationLog keeps the revocation events, written before the records
// they change and read to build the CRL.
type RevocationLog interface {
	// AppendRevocations appends events durably, all or none.
	AppendRevocations(events ...RevEvent) error
	// RevokeRecords appends the revocation event of every record (see
	// eventOf), then replaces the records: a crash keeps the events.
	RevokeRecords(rs []*Record) error
	// LatestRevocations returns the latest event of every serial, in
	// serial order.
	LatestRevocations() ([]LogEvent, error)
	// RevocationStamp changes whenever an event is appended.
	RevocationStamp() (FileStamp, error)
}

// CRLStore keeps the CRL number, the current CRL and the current delta
// CRL, and writes the published copy of each into the CA directory
// (crl.pem, then crl.der; crl-delta.pem, then crl-delta.der). It stores
// a delta CRL's bytes as they are given and never judges them: a delta
// whose number is below the current CRL's is kept, and its readers (the
// CA) ignore it.
type CRLStore interface {
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
	// CRLApart reports whether the current CRL is kept apart from its
	// published copy, so that a store restored from a backup may hold an
	// older CRL than the copy (false where the copy is the current CRL).
	CRLApart() bool

	// SaveDeltaCRL makes der, a delta CRL numbered number (reserved by
	// NextCRLNumber: complete and delta CRLs share one sequence), the current
	// delta CRL and writes its published copy into the CA directory
	// (crl-delta.pem, then crl-delta.der, each atomically, 0644), unless a
	// delta CRL with a higher number is current already; saved tells which.
	// A delta of the current delta's number replaces it, and its copy is
	// written again. A complete CRL saved later leaves the delta as it is.
	SaveDeltaCRL(number *big.Int, der []byte) (saved bool, err error)
	// DeltaCRL returns the current delta CRL's DER and number, or an error
	// matching fs.ErrNotExist when none was saved.
	DeltaCRL() (der []byte, number *big.Int, err error)
	// DeltaCRLStamp changes whenever the current delta CRL does; it gives an
	// error matching fs.ErrNotExist when there is none.
	DeltaCRLStamp() (FileStamp, error)
}

// EnrollmentStore keeps enrollments as the CA encodes them.
type EnrollmentStore interface {
	// CreateEnrollment writes a new enrollment durably; a taken ID gives
	// an error matching fs.ErrExist.
	CreateEnrollment(e EnrollmentData) error
	PutEnrollment(e EnrollmentData) error
	// Enrollment returns the enrollment of an ID; an unknown one gives an
	// error matching fs.ErrNotExist.
	Enrollment(id string) (EnrollmentData, error)
	// EnrollmentByName returns name's latest enrollment; a name without
	// one gives an error matching fs.ErrNotExist.
	EnrollmentByName(name string) (EnrollmentData, error)
	// Enrollments streams every enrollment in ID order.
	Enrollments() iter.Seq2[EnrollmentData, error]
}

// EnrollmentData is an enrollment as an engine keeps it: the CA encodes
// and decodes Data; Where names it in messages.
type EnrollmentData struct {
	ID, Name string
	Data     []byte
	Where    string
}

// ACMEStore keeps the state of the ACME server (serve/acme) and of its
// external account bindings (ca) as they encode it: objects named by a
// kind and an ID, and nonces. Its methods are safe for concurrent use, by
// the goroutines of one process and by the processes (serve replicas) of
// one CA: what must not race across them is done under Lock by the
// caller.
type ACMEStore interface {
	// CreateObject writes a new object durably; a taken kind and ID gives
	// an error matching fs.ErrExist.
	CreateObject(o Object) error
	// PutObject writes an object durably, replacing the one of its kind
	// and ID if there is one.
	PutObject(o Object) error
	// Object returns the object of kind and id; an unknown one gives an
	// error matching fs.ErrNotExist.
	Object(kind, id string) (Object, error)
	// Objects streams every object of kind in ID order.
	Objects(kind string) iter.Seq2[Object, error]
	// ObjectKinds returns, in sorted order, the kinds that hold at least
	// one object: what a copy of the store walks (nonces are no kind).
	ObjectKinds() ([]string, error)
	// DeleteObject removes the object of kind and id; an unknown one is
	// not an error.
	DeleteObject(kind, id string) error
	// AddNonce records a new nonce (IsNonce), good until expires. Nonces
	// need not survive a crash: a client told badNonce asks for another.
	AddNonce(nonce string, expires time.Time) error
	// UseNonce consumes a nonce: it reports true once for a nonce added
	// and not expired at now, false for an unknown, used or expired one,
	// whichever replica asks. Expired nonces are dropped by the engine.
	UseNonce(nonce string, now time.Time) (bool, error)
}

// Object is an ACME object as an engine keeps it: Kind is a lowercase
// word (IsObjectKind), ID a token of letters, digits, '-', '_' and '.'
// (IsObjectID); the owner encodes and decodes Data.
type Object struct {
	Kind, ID string
	Data     []byte
	// Volatile, on a write, lets the engine skip making it durable: a
	// crash may lose it (leaving the object as it was before, or without
	// it), but no reader ever sees it torn. For state a client redoes
	// when it is lost (an authorization's progress, a rate counter).
	Volatile bool
}

// CRLCopy is a file of the published copy of the current CRL.
type CRLCopy struct {
	Name string // its path, for messages
	Data []byte
}

// Coordination is what the processes of one CA share beyond the lock:
// the CRL signer's lease, CRL notifications and the registration of
// running serves. On an engine that one host's processes share through
// the CA directory, there is nothing to share beyond the lock.
type Coordination interface {
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

// Maintenance is what Check and CopyStore ask of an engine: repairs of
// what only the engine knows, and the copy of a whole Store.
type Maintenance interface {
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
	// returns the current CRL, or nil when there is none, reporting why as
	// a problem (what is wrong, not what to run: the program advises). It
	// also rewrites a missing or stale published copy of the current delta
	// CRL (see CheckDeltaCRLCopy).
	CheckCRL(fixed, problem func(string)) (*revoke.CRL, error)
	// PublishedCopies returns the copies of the current CRL that the
	// engine keeps apart from its Store, which a Store restored
	// from a backup may lag behind; none where the copy is the Store.
	PublishedCopies() []CRLCopy
	// RaiseCRLNumber makes the next CRL number greater than n where the
	// engine would not already, reporting whether it did.
	RaiseCRLNumber(n *big.Int) (bool, error)
	// AdoptPublishedCRL makes the published copy the current CRL: what a
	// new CA published before it had a Store.
	AdoptPublishedCRL() error
	// Load writes d, the whole Store of another store, into this one,
	// which must hold no record, revocation, enrollment or object
	// (ErrStoreNotEmpty); it returns how many records it wrote.
	Load(d *Contents) (int, error)
}

// Contents is the whole issuance database of a CA, read for a copy (see
// Load). Records are streamed; the rest is small next to them. The ACME
// nonces are not part of it: they are good for minutes, and a client
// told badNonce asks for another.
type Contents struct {
	Records     iter.Seq2[*Record, error] // serial order; an error ends them
	Events      []RevEvent                // the latest of each serial
	Enrollments []EnrollmentData          // in the order to write them
	Objects     []Object                  // the ACME objects, by kind and ID
	LastNumber  *big.Int                  // the last CRL number used
	CRL         []byte                    // the current CRL, DER; nil without one
	CRLNumber   *big.Int
	DeltaCRL    []byte // the current delta CRL, DER; nil without one
	DeltaNumber *big.Int
}
