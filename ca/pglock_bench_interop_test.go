//go:build interop

package ca

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"minica/internal/pgtest"
)

// BenchmarkPGLockCheck is what the check of the CA lock costs the writes
// on PostgreSQL: one issuance and a batch (benchBatchN) with the lock held,
// as the CLI holds it (every write checks the lock), against the same
// without the lock (no check). Run with -count to alternate the two.
func BenchmarkPGLockCheck(b *testing.B) {
	url := pgtest.New(b)
	c, signer := newTestCA(b, InitOptions{Store: url})
	seq := 0 // b.Run may run a function more than once: names never repeat
	write := &Record{Serial: "00000000000000000000000000000001", Name: "w", Status: StatusVoid, IssuedAt: time.Now()}
	if _, err := c.db.Reserve(write); err != nil {
		b.Fatal(err)
	}
	for _, locked := range []bool{false, true} {
		b.Run(fmt.Sprintf("write/locked=%v", locked), func(b *testing.B) {
			holdLockIf(b, c, locked)
			for b.Loop() {
				if err := c.db.PutRecord(write); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, locked := range []bool{false, true} {
		b.Run(fmt.Sprintf("issue/locked=%v", locked), func(b *testing.B) {
			holdLockIf(b, c, locked)
			for b.Loop() {
				seq++
				if _, err := c.Issue(signer, Request{Name: fmt.Sprintf("one-%d", seq), Profile: Client}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	n := benchBatchN(b)
	for _, locked := range []bool{false, true} {
		b.Run(fmt.Sprintf("batch/locked=%v", locked), func(b *testing.B) {
			holdLockIf(b, c, locked)
			for b.Loop() {
				seq++
				reqs := clientRequests(fmt.Sprintf("b%d-", seq), n)
				if _, err := c.IssueBatch(signer, slices.Values(reqs), BatchOptions{}, func(BatchResult) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// holdLockIf holds the CA lock of c for the rest of b when locked.
func holdLockIf(b *testing.B, c *CA, locked bool) {
	if !locked {
		return
	}
	unlock, err := c.Lock(time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(unlock)
}
