// Command bigcrl appends N revocations of made-up serials to the revocation
// log of a CA directory (db/revoked.log, one JSON line per revocation, the
// format ca/revlog.go reads), so that the next `minica crl` publishes a CRL
// of that many more entries. Revoking that many certificates one by one
// with `minica revoke` would take hours; the serials here belong to no
// certificate, which is all a CRL-size benchmark needs.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

type revEvent struct {
	Serial    string    `json:"serial"`
	RevokedAt time.Time `json:"revoked_at"`
	Reason    string    `json:"reason"`
	NotAfter  time.Time `json:"not_after"`
}

func main() {
	dir := flag.String("dir", os.Getenv("MINICA_DIR"), "CA directory (default $MINICA_DIR)")
	n := flag.Int("n", 100000, "number of revocations to append")
	flag.Parse()
	if err := run(*dir, *n); err != nil {
		fmt.Fprintln(os.Stderr, "bigcrl:", err)
		os.Exit(1)
	}
}

func run(dir string, n int) error {
	if dir == "" {
		return fmt.Errorf("no CA directory: set -dir or MINICA_DIR")
	}
	name := filepath.Join(dir, "db", "revoked.log")
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("opening revocation log %q: %w", name, err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	now := time.Now().UTC().Truncate(time.Second)
	for i := range n {
		ev := revEvent{
			// Spread over the 128-bit space like real random serials; the
			// top bit is clear so each stays a positive 16-octet integer.
			Serial:    fmt.Sprintf("%016x%016x", uint64(i+1)*0x9e3779b97f4a7c15>>1, uint64(i)*0xbf58476d1ce4e5b9),
			RevokedAt: now.Add(-time.Hour),
			Reason:    "superseded",
			NotAfter:  now.AddDate(1, 0, 0),
		}
		if err := enc.Encode(ev); err != nil {
			f.Close()
			return fmt.Errorf("writing revocation log %q: %w", name, err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("writing revocation log %q: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("syncing revocation log %q: %w", name, err)
	}
	return f.Close()
}
