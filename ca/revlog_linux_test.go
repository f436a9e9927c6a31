package ca

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"minica/revoke"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory and unmounts
// it when the test ends. It skips the test when not root or when the mount
// fails (a container without CAP_SYS_ADMIN, say).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: filling a filesystem needs root, to mount a small tmpfs")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Skipf("skipped: mounting a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// fillFilesystem writes file until the filesystem holding it has no free
// block left, and returns a func that removes it.
func fillFilesystem(t *testing.T, file string) func() {
	return fillLeaving(t, file, 0)
}

// fillLeaving is fillFilesystem leaving pages blocks free (tmpfs blocks are
// pages): it sets them aside in files of one block each, fills the rest and
// then removes those files.
func fillLeaving(t *testing.T, file string, pages int) func() {
	t.Helper()
	block := make([]byte, os.Getpagesize())
	for i := range pages {
		if err := os.WriteFile(fmt.Sprintf("%s.spare%d", file, i), block, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for i := 0; ; i++ {
		if _, err := f.Write(chunk); errors.Is(err, syscall.ENOSPC) {
			break
		} else if err != nil || i > 1<<14 {
			t.Fatalf("filling %s: %v (after %d chunks)", file, err, i)
		}
	}
	for i := range pages {
		if err := os.Remove(fmt.Sprintf("%s.spare%d", file, i)); err != nil {
			t.Fatal(err)
		}
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(file, &st); err != nil || st.Bfree != uint64(pages) {
		t.Fatalf("filesystem of %s after filling: %d blocks free (%v); want %d", file, st.Bfree, err, pages)
	}
	return func() {
		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRevokeOnFullFilesystem fills a tmpfs so that a revocation's log line
// meets the end of the free space at each of its bytes in turn. tmpfs
// allocates whole pages: with no page free, an append has exactly the room
// left in the log's last page, so each round first pads the log (with a
// whitespace-padded event, which reads like any other) to leave that many
// bytes there. An append that does not fit must fail and leave the log as
// it was; once space is freed, revoking works and check finds nothing to do.
// Each round puts one certificate on hold and lifts the hold again.
func TestRevokeOnFullFilesystem(t *testing.T) {
	mnt := mountTmpfs(t, "1m")
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, err := Init(mnt+"/ca", InitOptions{CommonName: "Full Root", Now: fixedClock(now)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Now = fixedClock(now)
	signer, err := c.LoadSigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(name string) *big.Int {
		is, err := c.Issue(signer, Request{Name: name, Profile: Client})
		if err != nil {
			t.Fatalf("Issue(%s): %v", name, err)
		}
		return is.Cert.SerialNumber
	}
	pad, alice, bob := issue("pad"), issue("alice"), issue("bob")
	if _, err := c.Revoke(alice, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PublishCRL(signer, 0); err != nil {
		t.Fatal(err)
	}
	logPath := c.Path(revlogFile)
	base, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	held, err := c.Record(bob)
	if err != nil {
		t.Fatal(err)
	}
	held.Status, held.RevokedAt, held.Reason = StatusRevoked, now, revoke.CertificateHold.String()
	hold, _ := json.Marshal(eventOf(held))
	hold = append(hold, '\n')
	lineLen := len(hold)
	page := os.Getpagesize()
	for room := 0; room <= lineLen; room++ {
		// A line of 60 bytes plus n spaces makes the log end room bytes
		// before a page boundary.
		n := ((page-room-len(base)-60)%page + page) % page
		padLine := `{"serial":"` + SerialHex(pad) + `","lifted":true` + strings.Repeat(" ", n) + "}\n"
		before := append(slices.Clone(base), padLine...)
		if err := os.WriteFile(logPath, before, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := (page - len(before)%page) % page; got != room {
			t.Fatalf("room in the log's last page = %d; want %d", got, room)
		}

		free := fillFilesystem(t, mnt+"/filler")
		_, err = c.Revoke(bob, revoke.CertificateHold)
		after, _ := os.ReadFile(logPath)
		switch {
		case room < lineLen:
			if err == nil || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "appending to revocation log") {
				t.Fatalf("room %d of %d: Revoke error = %v; want ENOSPC appending to the revocation log", room, lineLen, err)
			}
			if !bytes.Equal(after, before) {
				t.Fatalf("room %d of %d: the log changed from %d to %d bytes; want it cut back", room, lineLen, len(before), len(after))
			}
			if rec, _ := c.Record(bob); rec.Status != StatusValid {
				t.Fatalf("room %d of %d: record status %s after a failed revocation; want valid", room, lineLen, rec.Status)
			}
		default:
			// The line fits and lands whole; the record, written next, has
			// no room. The log is ahead, as after a crash there.
			if err == nil || !bytes.Equal(after, append(slices.Clone(before), hold...)) {
				t.Fatalf("room %d of %d: Revoke error = %v, log %d -> %d bytes; want an error and the whole line appended", room, lineLen, err, len(before), len(after))
			}
		}
		free()

		if _, err := c.Revoke(bob, revoke.CertificateHold); err != nil {
			t.Fatalf("room %d: Revoke after freeing space: %v", room, err)
		}
		if _, err := c.PublishCRL(signer, 0); err != nil {
			t.Fatalf("room %d: PublishCRL after freeing space: %v", room, err)
		}
		if got := publishedSerials(t, c); len(got) != 2 || got[SerialHex(bob)] != "certificateHold" {
			t.Fatalf("room %d: the CRL lists %v; want alice and bob on hold", room, got)
		}
		rep, err := c.Check()
		if err != nil || len(rep.Repaired) > 0 || len(rep.Problems) > 0 {
			t.Fatalf("room %d: Check() = repaired %q, problems %q, %v; want nothing to do", room, rep.Repaired, rep.Problems, err)
		}
		if _, err := c.Revoke(bob, revoke.RemoveFromCRL); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PublishCRL(signer, 0); err != nil {
			t.Fatal(err)
		}
	}
}
