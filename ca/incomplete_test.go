package ca

import (
	"crypto"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"minica/ca/store"
	"minica/ca/store/storetest"
)

// errWrite is the failure failingStore gives, as a dropped connection or
// a full disk would.
var errWrite = errors.New("write failed (test)")

// failingStore is a CA's store with some of its writes or reads failing.
type failingStore struct {
	database
	complete, update, records, enrollments bool
}

func (s *failingStore) Complete(res store.Reservation, r *Record) error {
	if s.complete {
		return errWrite
	}
	return s.database.Complete(res, r)
}

func (s *failingStore) CompleteGroup(res []store.Reservation, rs []*Record) error {
	if s.complete {
		return errWrite
	}
	return s.database.CompleteGroup(res, rs)
}

func (s *failingStore) UpdateRecord(r *Record) error {
	if s.update {
		return errWrite
	}
	return s.database.UpdateRecord(r)
}

func (s *failingStore) Records() iter.Seq2[*Record, error] {
	if s.records {
		return func(yield func(*Record, error) bool) { yield(nil, errWrite) }
	}
	return s.database.Records()
}

func (s *failingStore) Enrollments() iter.Seq2[storedEnrollment, error] {
	if s.enrollments {
		return func(yield func(storedEnrollment, error) bool) { yield(storedEnrollment{}, errWrite) }
	}
	return s.database.Enrollments()
}

// blockCurrentLink makes the current.crt link of name impossible to
// replace: a directory that is not empty is there.
func blockCurrentLink(t *testing.T, c *CA, name string) {
	t.Helper()
	if err := c.dir.Root().MkdirAll("certs/"+name+"/"+CurrentCertFile+"/x", 0o700); err != nil {
		t.Fatal(err)
	}
}

// An issuance that signed a certificate but could not complete what goes
// with it (the record, the name's current.* links, the predecessor's
// renewal link) says so with ErrIssuanceIncomplete, whichever way it
// issued, and leaves the advice (run check) to the program: the error
// states what happened and names no command.
func TestIssuanceIncomplete(t *testing.T) {
	client := Request{Name: "alice", Profile: Client, Emails: []string{"alice@example.com"}}
	issue := func(c *CA, signer crypto.Signer) error {
		_, err := c.Issue(signer, client)
		return err
	}
	batch := func(c *CA, signer crypto.Signer) error {
		_, err := c.IssueBatch(signer, slices.Values([]Request{client}), BatchOptions{}, func(BatchResult) error { return nil })
		return err
	}
	intermediate := func(c *CA, signer crypto.Signer) error {
		_, err := c.SignIntermediate(signer, IntermediateRequest{Name: "alice", CSR: newPending(t, "Issuing 1", Constraints{}).CSR, Validity: 365 * 24 * time.Hour})
		return err
	}
	for _, tt := range []struct {
		name  string
		root  bool
		setup func(t *testing.T, c *CA)
		run   func(c *CA, signer crypto.Signer) error
	}{
		{"issue: the record", false, failComplete, issue},
		{"issue: the current links", false, blockAlice, issue},
		{"batch: the records", false, failComplete, batch},
		{"batch: the current links", false, blockAlice, batch},
		{"intermediate: the record", true, failComplete, intermediate},
		{"intermediate: the current links", true, blockAlice, intermediate},
		{"renew: the predecessor's link", false, func(*testing.T, *CA) {}, func(c *CA, signer crypto.Signer) error {
			old, err := c.Issue(signer, client)
			if err != nil {
				return err
			}
			c.db = &failingStore{database: c.db, update: true}
			_, err = c.Renew(signer, old.Record, RenewOptions{})
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c *CA
			if tt.root {
				c, _ = newRoot(t, InitOptions{})
			} else {
				c, _ = newTestCA(t, InitOptions{})
			}
			signer := signerOf(t, c)
			tt.setup(t, c)
			err := tt.run(c, signer)
			if !errors.Is(err, ErrIssuanceIncomplete) {
				t.Fatalf("error = %v; want ErrIssuanceIncomplete", err)
			}
			if strings.Contains(err.Error(), "minica ") {
				t.Errorf("error %q names a command; the program chooses the advice", err)
			}
		})
	}
}

func failComplete(_ *testing.T, c *CA) { c.db = &failingStore{database: c.db, complete: true} }
func blockAlice(t *testing.T, c *CA)   { blockCurrentLink(t, c, "alice") }

// A copy whose source store cannot be read in full says so with
// ErrCopySourceUnreadable, naming no command.
func TestCopySourceUnreadable(t *testing.T) {
	for _, tt := range []struct {
		name string
		src  failingStore
	}{
		{"records", failingStore{records: true}},
		{"enrollments", failingStore{enrollments: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := storeHarnessFile(t)
			storetest.Issue(t, src.Store, 1, "alice")
			tt.src.database = src.Store
			_, err := copyStore(&tt.src, storeHarnessFile(t).Store, src.Cert)
			if !errors.Is(err, ErrCopySourceUnreadable) || !errors.Is(err, errWrite) {
				t.Fatalf("copyStore() error = %v; want ErrCopySourceUnreadable wrapping the cause", err)
			}
			if strings.Contains(err.Error(), "minica ") {
				t.Errorf("error %q names a command; the program chooses the advice", err)
			}
		})
	}
}
