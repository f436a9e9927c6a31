package ca

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"math/big"
	"slices"
	"strings"

	"minica/ca/store"
	"minica/revoke"
)

// ErrStoreNotEmpty is returned by CopyStore for a target that holds records,
// revocations, enrollments or ACME objects already: a copy never merges two
// databases.
var ErrStoreNotEmpty = store.ErrStoreNotEmpty

// ErrCopySourceUnreadable is matched by the error of CopyStore when a
// record, an enrollment or an ACME object of the store it copies could not
// be read.
var ErrCopySourceUnreadable = errors.New("the store to copy could not be read")

// CopyResult tells what CopyStore copied.
type CopyResult struct {
	To          string // the target, as given
	Records     int
	Revocations int // serials whose latest revocation event was copied
	Enrollments int
	Objects     int      // ACME objects
	CRLNumber   *big.Int // the current CRL's number, nil without one
}

// CopyStore copies the CA's database, whichever store holds it, to the
// store to: a postgres:// URL (migrated first if need be) or the path of a
// CA directory of the same CA, whose file store must be empty (a copy of
// the CA's ca.crt, ca.key, chain.pem and settings.json). Records are copied
// as they are (pending and void ones included), the revocation log as the
// latest event of each serial, the CRL number and the current CRL, every
// enrollment and every ACME object; the ACME nonces are not (they last
// minutes, and a client told badNonce asks for another). The target must
// hold no record, revocation, enrollment or ACME object (ErrStoreNotEmpty);
// a PostgreSQL target is written in one transaction, so a failed copy
// leaves it empty. The caller holds the lock.
func (c *CA) CopyStore(to string) (*CopyResult, error) {
	target, err := c.openCopyTarget(to)
	if err != nil {
		return nil, err
	}
	defer target.close()
	if target.db.String() == c.db.String() {
		return nil, fmt.Errorf("%w: %q is where the database is already", ErrStoreNotEmpty, to)
	}
	res, err := copyStore(c.db, target.db, c.Cert)
	if err != nil {
		return nil, err
	}
	res.To = to
	return res, target.finish()
}

// copyStore writes the whole database of from, a store of the CA whose
// certificate is cert, into to, an empty store of the same CA. It asks
// only what every engine answers, so a copy runs between any two.
func copyStore(from, to database, cert *x509.Certificate) (*CopyResult, error) {
	d, err := readStoreData(from, cert)
	if err != nil {
		return nil, err
	}
	n, err := to.Load(d)
	if err != nil {
		return nil, err
	}
	return &CopyResult{Records: n, Revocations: len(d.Events), Enrollments: len(d.Enrollments), Objects: len(d.Objects), CRLNumber: d.CRLNumber}, nil
}

// readStoreData reads the database of db, whose CA certificate is cert,
// for a copy.
func readStoreData(db database, cert *x509.Certificate) (*storeData, error) {
	d := &storeData{Records: copiedRecords(db)}
	events, err := db.LatestRevocations()
	if err != nil {
		return nil, err
	}
	d.Events = make([]revEvent, len(events))
	for i := range events {
		d.Events[i] = events[i].RevEvent()
	}
	if d.LastNumber, err = db.LastCRLNumber(); err != nil {
		return nil, err
	}
	der, err := db.CRL()
	switch {
	case err == nil:
		d.CRL = der
		if d.CRLNumber, err = revoke.CRLNumber(der, cert); err != nil {
			return nil, fmt.Errorf("reading CRL %q: %w", db.CRLName(), err)
		}
		if d.CRLNumber.Cmp(d.LastNumber) > 0 {
			d.LastNumber = d.CRLNumber
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("reading CRL %q: %w", db.CRLName(), err)
	}
	switch d.DeltaCRL, d.DeltaNumber, err = db.DeltaCRL(); {
	case err == nil:
		if _, err := revoke.ParseDelta(d.DeltaCRL, cert); err != nil {
			return nil, fmt.Errorf("reading the delta CRL of %s: %w", db, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		d.DeltaCRL, d.DeltaNumber = nil, nil
	default:
		return nil, fmt.Errorf("reading the delta CRL of %s: %w", db, err)
	}
	if d.Enrollments, err = copiedEnrollments(db); err != nil {
		return nil, err
	}
	if d.Objects, err = copiedObjects(db); err != nil {
		return nil, err
	}
	return d, nil
}

// copiedObjects returns every ACME object of db, by kind and ID.
func copiedObjects(db database) ([]store.Object, error) {
	kinds, err := db.ObjectKinds()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCopySourceUnreadable, err)
	}
	var out []store.Object
	for _, kind := range kinds {
		for o, err := range db.Objects(kind) {
			if err != nil {
				return nil, fmt.Errorf("%w: reading the ACME %s: %w", ErrCopySourceUnreadable, kind, err)
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// copiedRecords streams the records of db for a copy; a corrupt one stops
// it.
func copiedRecords(db database) iter.Seq2[*Record, error] {
	return func(yield func(*Record, error) bool) {
		for rec, err := range db.Records() {
			if err != nil {
				yield(nil, fmt.Errorf("%w: reading the records: %w", ErrCopySourceUnreadable, err))
				return
			}
			if !yield(rec, nil) {
				return
			}
		}
	}
}

// copiedEnrollments returns every enrollment of db, oldest first, and
// each name's latest after its others, so that the target's "latest of a
// name" is the source's.
func copiedEnrollments(db database) ([]storedEnrollment, error) {
	var out []storedEnrollment
	decoded := map[string]*Enrollment{} // ID: the enrollment
	latest := map[string]string{}       // name: the ID of its latest enrollment
	for se, err := range db.Enrollments() {
		var e *Enrollment
		if err == nil {
			e, err = decodeEnrollment(se)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: reading the enrollments: %w", ErrCopySourceUnreadable, err)
		}
		se.Name = e.Name
		out = append(out, se)
		decoded[e.ID] = e
		if _, ok := latest[e.Name]; !ok {
			l, err := db.EnrollmentByName(e.Name)
			var le *Enrollment
			if err == nil {
				le, err = decodeEnrollment(l)
			}
			if err != nil {
				return nil, err
			}
			latest[e.Name] = le.ID
		}
	}
	slices.SortStableFunc(out, func(sa, sb storedEnrollment) int {
		a, b := decoded[sa.ID], decoded[sb.ID]
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
	return out, nil
}

// copyTarget is the store a copy writes to.
type copyTarget struct {
	db database
	// finish completes what the target's CA directory derives from the
	// copied CRL (crl-chain.pem of an intermediate).
	finish func() error
	close  func()
}

// openCopyTarget opens the store named by to, the argument of CopyStore.
func (c *CA) openCopyTarget(to string) (*copyTarget, error) {
	if e := engineOf(to, c.engines); e != nil {
		if _, _, err := e.Migrate(to); err != nil {
			return nil, err
		}
		// The target's published copy is this CA directory's, which
		// the copy leaves as it is.
		db, err := e.Open(to, c.Cert, c.dir, store.OpenOptions{})
		if err != nil {
			return nil, err
		}
		return &copyTarget{db: db, finish: func() error { return nil }, close: func() { db.Close() }}, nil
	}
	if err := CheckStore(to, c.engines...); err == nil || strings.Contains(to, "://") {
		return nil, fmt.Errorf("%w %s: store copy --to takes a postgres:// URL or the path of a CA directory", ErrBadStore, printable(to))
	}
	t, err := openDir(to)
	if err != nil {
		return nil, err
	}
	if !t.Cert.Equal(c.Cert) {
		t.Close()
		return nil, fmt.Errorf("%w: %q is another CA's directory", ErrForeignStore, to)
	}
	return &copyTarget{db: t.db, finish: t.writeCRLChain, close: func() { t.Close() }}, nil
}
