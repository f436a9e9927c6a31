package ca

import (
	"encoding/json"
	"fmt"
	"math/big"
	"path"
	"testing"
	"time"

	"minica/ca/store"
	"minica/revoke"
)

// BenchmarkRevokeAndPublish revokes one certificate in a database of
// benchRecords records and republishes the CRL, as `minica revoke` does.
// Half the records are revoked already, so the CRL is large as well.
func BenchmarkRevokeAndPublish(b *testing.B) {
	n := benchRecords(b)
	c, signer := newTestCA(b, InitOptions{})
	fillRevocationRecords(b, c, n)
	b.ResetTimer()
	entries := 0
	for i := 0; b.Loop(); i++ {
		serial := new(big.Int).SetUint64(uint64(2*i+1)*0x9e3779b97f4a7c15 + 1) // a valid record
		if _, err := c.Revoke(serial, revoke.KeyCompromise); err != nil {
			b.Fatal(err)
		}
		info, err := c.PublishCRL(signer, 0)
		if err != nil {
			b.Fatal(err)
		}
		entries = info.Entries
	}
	if want := (n+1)/2 + b.N; entries != want {
		b.Fatalf("CRL lists %d entries; want %d", entries, want)
	}
	b.ReportMetric(float64(entries), "crl-entries")
}

// fillRevocationRecords writes n synthetic records, every other one revoked
// and in the revocation log, straight into the database without fsync:
// benchmark set-up only.
func fillRevocationRecords(tb testing.TB, c *CA, n int) {
	tb.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	var log []byte
	for i := range n {
		serial := fmt.Sprintf("%032x", uint64(i)*0x9e3779b97f4a7c15+1)
		r := &Record{
			Serial: serial, Name: fmt.Sprintf("fill-%d", i), Profile: Client, Status: StatusValid,
			Subject: "CN=fill", NotBefore: now, NotAfter: now.AddDate(1, 0, 0), IssuedAt: now,
		}
		if i%2 == 0 {
			r.Status, r.RevokedAt, r.Reason = StatusRevoked, now.Add(-time.Hour), "superseded"
			line, _ := json.Marshal(eventOf(r))
			log = append(append(log, line...), '\n')
		}
		if err := c.dir.MkdirAll(path.Dir(recordPath(serial))); err != nil {
			tb.Fatal(err)
		}
		if err := c.dir.Root().WriteFile(recordPath(serial), store.EncodeRecord(r), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if err := c.dir.Root().WriteFile(revlogFile, log, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkPublishCRL publishes a CRL from a revocation log of n revoked
// certificates, as `minica crl` does.
func BenchmarkPublishCRL(b *testing.B) {
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			c, signer := newTestCA(b, InitOptions{})
			writeRevocationLog(b, c, n)
			b.ResetTimer()
			for b.Loop() {
				info, err := c.PublishCRL(signer, 0)
				if err != nil {
					b.Fatal(err)
				}
				if info.Entries != n {
					b.Fatalf("published %d entries; want %d", info.Entries, n)
				}
			}
		})
	}
}

// writeRevocationLog writes a revocation log of n revoked certificates
// without fsync: benchmark set-up only.
func writeRevocationLog(tb testing.TB, c *CA, n int) {
	tb.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	var buf []byte
	reasons := []string{"keyCompromise", "superseded", "cessationOfOperation"}
	for i := range n {
		ev := revEvent{Serial: fmt.Sprintf("%032x", uint64(i)*0x9e3779b97f4a7c15+1), RevokedAt: now.Add(-time.Duration(i%86400) * time.Second),
			Reason: reasons[i%3], NotAfter: now.AddDate(1, 0, 0)}
		line, _ := json.Marshal(ev)
		buf = append(append(buf, line...), '\n')
	}
	if err := c.dir.MkdirAll("db"); err != nil {
		tb.Fatal(err)
	}
	if err := c.dir.Root().WriteFile(revlogFile, buf, 0o644); err != nil {
		tb.Fatal(err)
	}
}
