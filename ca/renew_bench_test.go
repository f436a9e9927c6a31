package ca

import (
	"context"
	"fmt"
	"minica/ca/store"
	"path"
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

// BenchmarkPlanRenewals plans renew --expiring over a database of
// MINICA_BENCH_BATCH_N records as issuance writes them (a pending line and
// the completed one), every one of them due: the pass that comes before the
// first successor's key.
func BenchmarkPlanRenewals(b *testing.B) {
	n := benchBatchN(b)
	c, _ := newTestCA(b, InitOptions{})
	fillIssuedRecords(b, c, n)
	b.ResetTimer()
	for b.Loop() {
		plan, err := c.PlanRenewals(30*24*time.Hour, RenewOptions{})
		if err != nil || len(plan.Due) != n {
			b.Fatalf("plan: %v, %d due; want %d", err, len(plan.Due), n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
}

// fillIssuedRecords writes n records of ECDSA client certificates that
// expire in 10 days, each file as Issue leaves it: the pending line, then
// the completed one. No certificate files: set-up for planning benchmarks.
func fillIssuedRecords(tb testing.TB, c *CA, n int) {
	tb.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	for i := range n {
		serial := fmt.Sprintf("%032x", uint64(i)*0x9e3779b97f4a7c15+1)
		name := fmt.Sprintf("r%d", i+1)
		r := &Record{Serial: serial, Name: name, Profile: Client, Status: StatusPending, HasKey: true, IssuedAt: now}
		data := store.EncodeRecord(r)
		r.Status = StatusValid
		r.Subject = "emailAddress=" + name + "@example.com,CN=" + name
		r.SANs = []string{"email:" + name + "@example.com"}
		r.NotBefore, r.NotAfter = now.Add(-5*time.Minute), now.Add(10*24*time.Hour-5*time.Minute)
		r.Fingerprint = fmt.Sprintf("%064x", i)
		data = append(data, store.EncodeRecord(r)...)
		file := recordPath(serial)
		if err := c.dir.MkdirAll(path.Dir(file)); err != nil {
			tb.Fatal(err)
		}
		if err := c.dir.Root().WriteFile(file, data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
