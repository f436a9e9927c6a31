package ca

import (
	"fmt"
	"minica/ca/store"
	"os"
	"path"
	"strconv"
	"testing"
	"time"
)

// benchRecords is the size of the large database in BenchmarkIssue:
// MINICA_BENCH_RECORDS, default 100000; docs/performance.md uses 1000000.
func benchRecords(b *testing.B) int {
	n := 100000
	if v := os.Getenv("MINICA_BENCH_RECORDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatalf("MINICA_BENCH_RECORDS: %v", err)
		}
	}
	return n
}

// BenchmarkIssue issues client certificates into an empty database and into
// one of benchRecords records: the cost per certificate must not grow with
// the database.
func BenchmarkIssue(b *testing.B) {
	for _, n := range []int{0, benchRecords(b)} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			c, signer := newTestCA(b, InitOptions{})
			fillRecords(b, c, n)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := c.Issue(signer, Request{Name: fmt.Sprintf("bench-%d", i), Profile: Client}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkList streams every record of a benchRecords database.
func BenchmarkList(b *testing.B) {
	c, _ := newTestCA(b, InitOptions{})
	n := benchRecords(b)
	fillRecords(b, c, n)
	b.ResetTimer()
	for b.Loop() {
		count := 0
		for _, err := range c.Records() {
			if err != nil {
				b.Fatal(err)
			}
			count++
		}
		if count != n {
			b.Fatalf("listed %d records; want %d", count, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
}

// fillRecords writes n synthetic valid records straight into the database,
// without fsync: set-up for benchmarks, not an issuance path.
func fillRecords(tb testing.TB, c *CA, n int) {
	tb.Helper()
	now := time.Now().UTC()
	for i := range n {
		serial := fmt.Sprintf("%032x", uint64(i)*0x9e3779b97f4a7c15+1)
		r := &Record{
			Serial: serial, Name: fmt.Sprintf("fill-%d", i), Profile: Client, Status: StatusValid,
			Subject: "CN=fill", NotBefore: now, NotAfter: now.AddDate(1, 0, 0), IssuedAt: now,
		}
		file := recordPath(serial)
		if i < 256 || serial[2:4] == "00" {
			if err := c.dir.MkdirAll(path.Dir(file)); err != nil {
				tb.Fatal(err)
			}
		}
		if err := c.dir.Root().WriteFile(file, store.EncodeRecord(r), 0o644); err != nil {
			if err := c.dir.MkdirAll(path.Dir(file)); err != nil {
				tb.Fatal(err)
			}
			if err := c.dir.Root().WriteFile(file, store.EncodeRecord(r), 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
}
