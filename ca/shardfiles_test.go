package ca

import (
	"minica/ca/store"
	"os"
	"path/filepath"
	"testing"
)

// Records reads every record, whatever its size, and never follows a
// symbolic link out of the shard.
func TestRecordsReadShardFiles(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	is, err := c.Issue(signer, Request{Name: "big", Profile: Client, URIs: []string{"https://example.com/"}})
	if err != nil {
		t.Fatal(err)
	}
	// A record larger than the first read buffer (4 KiB).
	long := make([]string, 300)
	for i := range long {
		long[i] = "dns:x.example.com"
	}
	is.Record.SANs = long
	if err := c.putRecord(is.Record); err != nil {
		t.Fatal(err)
	}
	n := 0
	for rec, err := range c.Records() {
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.SANs) != len(long) {
			t.Errorf("record read with %d SANs; want %d", len(rec.SANs), len(long))
		}
		n++
	}
	if n != 1 {
		t.Fatalf("Records yielded %d; want 1", n)
	}
	outside := filepath.Join(t.TempDir(), "outside.json")
	if err := os.WriteFile(outside, store.EncodeRecord(is.Record), 0o644); err != nil {
		t.Fatal(err)
	}
	link := c.dir.Join("db/" + is.Record.Serial[:2] + "/00000000000000000000000000000001.json")
	if err := os.Symlink(outside, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	for _, err := range c.Records() {
		if err != nil {
			return // refused, as a record must not come from outside
		}
	}
	t.Error("Records followed a symbolic link out of the CA directory")
}
