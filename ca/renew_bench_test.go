package ca

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkRenewBatch renews, as renew --expiring does (PlanRenewals, then
// RenewBatch with group commit), a batch of ECDSA P-256 client certificates
// that all expire within the window; compare its ns/cert with
// BenchmarkBatch/group=64, the batch issuance of the same certificates.
func BenchmarkRenewBatch(b *testing.B) {
	n := benchBatchN(b)
	for b.Loop() {
		b.StopTimer()
		c, signer := newTestCA(b, InitOptions{})
		reqs := clientRequests("u", n)
		for i := range reqs {
			reqs[i].Validity = 10 * 24 * time.Hour
		}
		if _, err := c.IssueBatch(signer, slices.Values(reqs), BatchOptions{}, func(BatchResult) error { return nil }); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		plan, err := c.PlanRenewals(30*24*time.Hour, RenewOptions{})
		if err != nil || len(plan.Due) != n {
			b.Fatalf("plan: %v, %d due; want %d", err, len(plan.Due), n)
		}
		if _, err := c.RenewBatch(context.Background(), signer, plan.Due, RenewOptions{}, BatchOptions{}, func(*Renewed) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/cert")
}
