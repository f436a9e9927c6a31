//go:build interop

package ca

import (
	"context"
	"crypto"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"minica/ca/store/pg"
	"minica/revoke"
)

// The connection of a write is cut (pg_terminate_backend from another
// session) inside its transaction, before the commit: the operation fails
// with an error naming the store, nothing half-done stays that Check does
// not repair, and the same operation on the same handle then succeeds on
// a new connection.
func TestPGConnectionDropped(t *testing.T) {
	tests := []struct {
		name string
		nth  int // the write whose connection is cut, from 1
		op   func(c *CA, signer crypto.Signer) error
		// after checks the state once Check ran.
		after func(t *testing.T, c *CA)
	}{
		{name: "reservation of an issuance", nth: 1, op: issueSimon, after: func(t *testing.T, c *CA) {
			if recs, _ := c.RecordsByName("simon"); len(recs) != 0 {
				t.Errorf("simon has %d records after a failed reservation; want none", len(recs))
			}
		}},
		{name: "completion of an issuance", nth: 2, op: issueSimon, after: func(t *testing.T, c *CA) {
			// The certificate reached the disk before the completion
			// was cut off: Check completes its record, never loses it.
			recs, _ := c.RecordsByName("simon")
			if len(recs) != 1 || recs[0].Status != StatusValid {
				t.Errorf("simon's records after Check = %+v; want one valid", recs)
			}
		}},
		{name: "revocation", nth: 1, op: revokeBob, after: func(t *testing.T, c *CA) {
			recs, _ := c.RecordsByName("bob")
			if len(recs) != 1 || recs[0].Status != StatusValid {
				t.Errorf("bob's records after a failed revocation = %+v; want one valid", recs)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, signer, url := newPGCA(t)
			if _, err := c.Issue(signer, Request{Name: "bob", Profile: Client}); err != nil {
				t.Fatal(err)
			}
			s := c.db.(*pg.Store)
			writes := 0
			s.SetBeforeCommit(func(ctx context.Context, tx pgx.Tx, attempt int) error {
				writes++
				if writes != tt.nth {
					return nil
				}
				var pid int32
				if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
					return err
				}
				killBackend(t, url, pid)
				return nil
			})
			err := tt.op(c, signer)
			if err == nil || !strings.Contains(err.Error(), url) {
				t.Fatalf("error = %v; want one naming the store %q", err, url)
			}
			s.SetBeforeCommit(nil)
			rep, err := c.Check()
			if err != nil || len(rep.Problems) != 0 {
				t.Fatalf("Check = %+v, %v; want no problems", rep, err)
			}
			tt.after(t, c)
			// The handle works on: the operation again, or its effect is
			// there already.
			if err := tt.op(c, signer); err != nil && !errors.Is(err, ErrNameTaken) {
				t.Fatalf("the operation again: %v", err)
			}
			// A revocation is on the CRL once one is published.
			rep, err = c.CheckWith(CheckOptions{Signer: func() (crypto.Signer, error) { return signer, nil }})
			if err != nil || len(rep.Problems) != 0 {
				t.Fatalf("Check after = %+v, %v; want no problems", rep, err)
			}
		})
	}
}

func issueSimon(c *CA, signer crypto.Signer) error {
	_, err := c.Issue(signer, Request{Name: "simon", Profile: Client})
	return err
}

func revokeBob(c *CA, _ crypto.Signer) error {
	recs, err := c.RecordsByName("bob")
	if err != nil {
		return err
	}
	serial, _ := new(big.Int).SetString(recs[0].Serial, 16)
	res, err := c.Revoke(serial, revoke.KeyCompromise)
	if err == nil && res.Already {
		return ErrNameTaken // done by the first attempt
	}
	return err
}

// killBackend ends the session of backend pid, from a session of its own.
func killBackend(t *testing.T, url string, pid int32) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close(ctx)
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_terminate_backend($1, 5000)", pid).Scan(&ok); err != nil || !ok {
		t.Errorf("pg_terminate_backend(%d) = %v, %v", pid, ok, err)
	}
}
