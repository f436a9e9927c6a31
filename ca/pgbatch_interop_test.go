//go:build interop

package ca

import (
	"context"
	"errors"
	"minica/ca/store/pg"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// countWrites counts the store's write transactions from now on.
func countWrites(t *testing.T, c *CA) *atomic.Int64 {
	t.Helper()
	s, ok := c.db.(*pg.Store)
	if !ok {
		t.Fatalf("store is %T; want *pg.Store", c.db)
	}
	var n atomic.Int64
	s.SetBeforeCommit(func(context.Context, pgx.Tx, int) error {
		n.Add(1)
		return nil
	})
	return &n
}

// A batch on PostgreSQL commits each group twice, its reservations and its
// completions, and leaves what a batch on files leaves: every record valid,
// nothing for check to repair.
func TestPGIssueBatchCommitsPerGroup(t *testing.T) {
	c, signer, url := newPGCA(t)
	writes := countWrites(t, c)
	var names []string
	n, err := c.IssueBatch(signer, slices.Values(clientRequests("u", 10)), BatchOptions{GroupSize: 4}, func(r BatchResult) error {
		names = append(names, r.Request.Name)
		if got, err := c.Record(r.Issued.Cert.SerialNumber); err != nil || got.Status != StatusValid || got.Fingerprint == "" {
			t.Errorf("record of %s = %+v, %v; want it valid and complete", r.Request.Name, got, err)
		}
		return nil
	})
	if n != 10 || err != nil {
		t.Fatalf("IssueBatch = %d, %v; want 10, nil", n, err)
	}
	if len(names) != 10 || names[0] != "u1" || names[9] != "u10" {
		t.Errorf("reported %v; want u1 to u10 in order", names)
	}
	if got := writes.Load(); got != 6 {
		t.Errorf("%d write transactions for 3 groups; want 6", got)
	}
	if got := pgQueryInt(t, url, "SELECT count(*) FROM minica_records WHERE status = 'valid'"); got != 10 {
		t.Errorf("%d valid records; want 10", got)
	}
	rep, err := c.Check()
	if err != nil || len(rep.Repaired)+len(realProblems(rep)) != 0 || rep.Records != 10 {
		t.Errorf("Check = %+v, %v; want 10 records, nothing to repair", rep, err)
	}
}

// A request that fails validation reserves nothing: the rest of its group
// is issued, the later groups never start, as on files.
func TestPGIssueBatchStopsAtBadRequest(t *testing.T) {
	c, signer, url := newPGCA(t)
	reqs := clientRequests("u", 8)
	reqs[3].Emails = []string{"not an email"}
	var names []string
	n, err := c.IssueBatch(signer, slices.Values(reqs), BatchOptions{GroupSize: 5}, func(r BatchResult) error {
		names = append(names, r.Request.Name)
		return nil
	})
	if n != 4 || err == nil || !strings.Contains(err.Error(), `request 4 ("u4"): invalid email`) {
		t.Fatalf("IssueBatch = %d, %v; want 4 and an error naming request 4", n, err)
	}
	if !slices.Equal(names, []string{"u1", "u2", "u3", "u5"}) {
		t.Errorf("reported %v", names)
	}
	if got := pgQueryInt(t, url, "SELECT count(*) FROM minica_records"); got != 4 {
		t.Errorf("%d records; want the 4 issued, no reservation for u4", got)
	}
	rep, err := c.Check()
	if err != nil || len(rep.Repaired)+len(realProblems(rep)) != 0 || rep.Records != 4 {
		t.Errorf("Check = %+v, %v; want 4 records, nothing to repair", rep, err)
	}
}

// When the group's reservation fails nothing is signed: no record, no
// certificate file, and the error says what failed.
func TestPGIssueBatchReservationFails(t *testing.T) {
	c, signer, url := newPGCA(t)
	s := c.db.(*pg.Store)
	boom := errors.New("boom")
	s.SetBeforeCommit(func(context.Context, pgx.Tx, int) error { return boom })
	n, err := c.IssueBatch(signer, slices.Values(clientRequests("u", 3)), BatchOptions{}, func(BatchResult) error {
		t.Error("a certificate was reported")
		return nil
	})
	if n != 0 || !errors.Is(err, boom) || !strings.Contains(err.Error(), "reserving serial") || !strings.Contains(err.Error(), `request 1 ("u1")`) {
		t.Fatalf("IssueBatch = %d, %v; want 0 and the reservation's error for request 1", n, err)
	}
	if got := pgQueryInt(t, url, "SELECT count(*) FROM minica_records"); got != 0 {
		t.Errorf("%d records; want none", got)
	}
	if entries, err := os.ReadDir(c.dir.Join("certs")); err == nil && len(entries) != 0 {
		t.Errorf("certs/ holds %d entries; want none", len(entries))
	}
}
