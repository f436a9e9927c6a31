package ca

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"minica/formats"
)

// benchBatchN is the number of certificates per operation of the batch
// benchmarks: MINICA_BENCH_BATCH_N, default 1000 (scripts/bench/issue.sh
// sets it).
func benchBatchN(b *testing.B) int {
	n := 1000
	if v := os.Getenv("MINICA_BENCH_BATCH_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("MINICA_BENCH_BATCH_N: want a positive count, got %q", v)
		}
	}
	return n
}

// BenchmarkBatch issues a batch of ECDSA P-256 client certificates, as
// issue --from does, with the syncs of group commit.
func BenchmarkBatch(b *testing.B) {
	for _, group := range []int{1, 16, BatchGroupSize} {
		b.Run(fmt.Sprintf("group=%d", group), func(b *testing.B) { benchIssueBatch(b, group, false) })
	}
}

// BenchmarkBatchFloor is what a batch costs in Go without durability, the
// floor of scripts/bench/issue.sh: "engine" is IssueBatch with its syncs
// left out (the same files and records as minica writes), "bare" the least
// a Go program does for a certificate: a key, a signature, and the key and
// certificate written as PEM into one directory, no database, no fsync.
func BenchmarkBatchFloor(b *testing.B) {
	b.Run("engine", func(b *testing.B) { benchIssueBatch(b, 0, true) })
	b.Run("bare", benchBare)
}

// benchDir returns a directory for one batch. With MINICA_BENCH_KEEP set
// (scripts/bench/issue.sh sets it, and removes its directory at the end)
// it is left behind: ext4 without a journal skips, at every inode it
// allocates, the inodes freed nearby in the last minute (up to six when
// their inode table block has unwritten changes), so removing a floor's
// thousands of files would slow whatever the script times next.
func benchDir(b *testing.B) string {
	if os.Getenv("MINICA_BENCH_KEEP") == "" {
		return b.TempDir()
	}
	dir, err := os.MkdirTemp("", "minica-bench-")
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

func benchIssueBatch(b *testing.B, group int, noSync bool) {
	n := benchBatchN(b)
	for b.Loop() {
		b.StopTimer()
		c, signer := newTestCAIn(b, benchDir(b), InitOptions{})
		c.noSync = noSync
		reqs := clientRequests("u", n)
		b.StartTimer()
		if _, err := c.IssueBatch(signer, slices.Values(reqs), BatchOptions{GroupSize: group}, func(BatchResult) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/cert")
}

func benchBare(b *testing.B) {
	n := benchBatchN(b)
	c, signer := newTestCA(b, InitOptions{})
	for b.Loop() {
		b.StopTimer()
		dir := benchDir(b)
		b.StartTimer()
		for i := range n {
			req := Request{Name: fmt.Sprintf("u%d", i), Profile: Client, Emails: []string{fmt.Sprintf("u%d@example.com", i)}, EmailInSubject: true}
			uris, err := req.normalize(c.Settings)
			if err != nil {
				b.Fatal(err)
			}
			key, err := ECDSAP256.Generate()
			if err != nil {
				b.Fatal(err)
			}
			serial, err := randomSerial()
			if err != nil {
				b.Fatal(err)
			}
			now := time.Now()
			tmpl, err := req.template(serial, key.Public(), uris, now.Add(-Backdate), now.Add(req.Validity), c.Settings)
			if err != nil {
				b.Fatal(err)
			}
			der, err := x509.CreateCertificate(nil, tmpl, c.Cert, key.Public(), signer)
			if err != nil {
				b.Fatal(err)
			}
			keyPEM, err := formats.MarshalPrivateKeyPEM(key, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, req.Name+".key"), keyPEM, 0o600); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, req.Name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/cert")
}
