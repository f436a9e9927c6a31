package ca

import (
	"bytes"
	"crypto"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"minica/revoke"
)

func publishedSerials(t *testing.T, c *CA) map[string]string {
	t.Helper()
	crl, err := c.LoadCRL()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for e := range crl.Entries() {
		out[SerialHex(e.Serial)] = e.Reason.String()
	}
	return out
}

// TestRevocationLogDrivesTheCRL: the CRL comes from the revocation log, a
// lifted hold leaves it, and check reconciles records with the log after a
// crash at any point of a revocation.
func TestRevocationLogDrivesTheCRL(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	serial := func(name string) *big.Int {
		is, err := c.Issue(signer, Request{Name: name, Profile: Client})
		if err != nil {
			t.Fatal(err)
		}
		return is.Cert.SerialNumber
	}
	alice, bob, carol, dave := serial("alice"), serial("bob"), serial("carol"), serial("dave")
	for _, r := range []struct {
		s      *big.Int
		reason revoke.Reason
	}{{alice, revoke.KeyCompromise}, {bob, revoke.CertificateHold}, {bob, revoke.RemoveFromCRL}, {carol, revoke.CertificateHold}} {
		if _, err := c.Revoke(r.s, r.reason); err != nil {
			t.Fatalf("Revoke(%x, %s): %v", r.s, r.reason, err)
		}
	}
	if _, err := c.PublishCRL(signer, 0); err != nil {
		t.Fatal(err)
	}
	got := publishedSerials(t, c)
	want := map[string]string{SerialHex(alice): "keyCompromise", SerialHex(carol): "certificateHold"}
	if len(got) != len(want) || got[SerialHex(alice)] != want[SerialHex(alice)] || got[SerialHex(carol)] != want[SerialHex(carol)] {
		t.Fatalf("CRL lists %v; want %v", got, want)
	}

	// A crash after the log append, before the record changed: the record
	// still says valid; check makes it revoked.
	rec, _ := c.Record(alice)
	rec.Status, rec.Reason = StatusValid, ""
	if err := c.putRecord(rec); err != nil {
		t.Fatal(err)
	}
	// A revoked record whose log line was lost (e.g. a restored backup).
	rec, _ = c.Record(dave)
	rec.Status, rec.Reason, rec.RevokedAt = StatusRevoked, "superseded", c.Now().UTC()
	if err := c.putRecord(rec); err != nil {
		t.Fatal(err)
	}
	// An append cut short.
	f, err := os.OpenFile(c.Path(revlogFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"serial":"00`)
	f.Close()
	if _, err := c.PublishCRL(signer, 0); err != nil {
		t.Fatalf("PublishCRL with a torn last line: %v", err)
	}

	rep, err := c.Check()
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(rep.Repaired, "\n")
	for _, want := range []string{"dropped the unfinished last line", "interrupted revocation change of alice", "added the revocation of dave"} {
		if !strings.Contains(joined, want) {
			t.Errorf("check repairs = %q; want one containing %q", rep.Repaired, want)
		}
	}
	if len(rep.Problems) > 0 {
		t.Errorf("check problems: %v", rep.Problems)
	}
	if rec, _ := c.Record(alice); rec.Status != StatusRevoked || rec.Reason != "keyCompromise" {
		t.Errorf("alice after check: %s %s; want revoked keyCompromise", rec.Status, rec.Reason)
	}
	if _, err := c.PublishCRL(signer, 0); err != nil {
		t.Fatal(err)
	}
	if got := publishedSerials(t, c); len(got) != 3 || got[SerialHex(dave)] != "superseded" {
		t.Errorf("CRL after check lists %v; want alice, carol, dave (superseded)", got)
	}
	again, err := c.Check()
	if err != nil || len(again.Repaired) != 0 {
		t.Errorf("second check repaired %v, %v; want nothing", again.Repaired, err)
	}
}

// failingLog makes the revocation log fail as a full or broken disk does:
// WriteAt writes room bytes and then fails with ENOSPC; Sync and Truncate
// fail with syncErr and truncErr when they are set.
type failingLog struct {
	logFile
	room              int
	syncErr, truncErr error
}

func (f *failingLog) WriteAt(p []byte, off int64) (int, error) {
	if len(p) <= f.room {
		return f.logFile.WriteAt(p, off)
	}
	n, _ := f.logFile.WriteAt(p[:f.room], off)
	return n, syscall.ENOSPC
}

func (f *failingLog) Sync() error {
	if err := f.syncErr; err != nil {
		f.syncErr = nil // the sync after cutting back works
		return err
	}
	return f.logFile.Sync()
}

func (f *failingLog) Truncate(size int64) error {
	if f.truncErr != nil {
		return f.truncErr
	}
	return f.logFile.Truncate(size)
}

// TestRevokeCutsBackAFailedAppend fails the append of a revocation after
// each of its bytes in turn, and with a failed sync: the log must be left
// as it was and the record unchanged, and the next revocation must work.
// An unfinished line that a crash left at the end is cut off before the
// next append.
func TestRevokeCutsBackAFailedAppend(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	issue := func(name string) *big.Int {
		is, err := c.Issue(signer, Request{Name: name, Profile: Client})
		if err != nil {
			t.Fatal(err)
		}
		return is.Cert.SerialNumber
	}
	alice, bob := issue("alice"), issue("bob")
	if _, err := c.Revoke(alice, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	logPath := c.Path(revlogFile)
	base, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lineLen := len(base) // alice's line; bob's on hold is two bytes longer
	lineLen += len(revoke.CertificateHold.String()) - len(revoke.KeyCompromise.String())

	type fault struct {
		name    string
		tail    string // left at the end of the log by a crash
		wrap    *failingLog
		wantErr string // "" means the revocation works
	}
	faults := []fault{
		{name: "sync fails", wrap: &failingLog{room: 1 << 20, syncErr: syscall.EIO}, wantErr: "input/output error"},
		{name: "cutting back fails", wrap: &failingLog{room: 10, truncErr: syscall.EROFS},
			wantErr: "no space left on device; cutting the partial line off failed too (read-only file system), minica check removes it"},
		{name: "crash left half a line", tail: `{"serial":"` + SerialHex(bob)[:7]},
		{name: "crash left a whole line without its newline", tail: string(base[:len(base)-1])},
	}
	for n := range lineLen {
		faults = append(faults, fault{name: fmt.Sprintf("full after %d bytes", n), wrap: &failingLog{room: n}, wantErr: "no space left on device"})
	}
	for _, tt := range faults {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(logPath, append(slices.Clone(base), tt.tail...), 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.wrap != nil {
				c.wrapLog = func(f logFile) logFile { tt.wrap.logFile = f; return tt.wrap }
			}
			_, err := c.Revoke(bob, revoke.CertificateHold)
			c.wrapLog = nil
			after, _ := os.ReadFile(logPath)
			rec, _ := c.Record(bob)
			if tt.wantErr == "" {
				if err != nil || len(after) != len(base)+lineLen || !bytes.HasPrefix(after, base) {
					t.Fatalf("Revoke() error = %v, log %q; want the hold appended to %q", err, after, base)
				}
			} else {
				if err == nil || !strings.HasPrefix(err.Error(), "appending to revocation log") || !strings.HasSuffix(err.Error(), tt.wantErr) {
					t.Fatalf("Revoke() error = %v; want one appending to the revocation log, ending in %q", err, tt.wantErr)
				}
				if tt.wrap.truncErr == nil && !bytes.Equal(after, base) {
					t.Fatalf("log after the failed append = %q; want it cut back to %q", after, base)
				}
				if rec.Status != StatusValid {
					t.Fatalf("record status %s after the failed append; want valid", rec.Status)
				}
				if _, err := c.Revoke(bob, revoke.CertificateHold); err != nil {
					t.Fatalf("Revoke() once the disk works: %v", err)
				}
			}
			if got := publishedAfter(t, c, signer); len(got) != 2 || got[SerialHex(bob)] != "certificateHold" {
				t.Fatalf("the CRL lists %v; want alice and bob on hold", got)
			}
			rep, err := c.Check()
			if err != nil || len(rep.Problems) > 0 || len(rep.Repaired) > 0 {
				t.Fatalf("Check() = repaired %q, problems %q, %v; want nothing to do", rep.Repaired, rep.Problems, err)
			}
			if _, err := c.Revoke(bob, revoke.RemoveFromCRL); err != nil {
				t.Fatal(err)
			}
			base, _ = os.ReadFile(logPath)
		})
	}
}

// publishedAfter publishes a CRL and returns its serials and reasons.
func publishedAfter(t *testing.T, c *CA, signer crypto.Signer) map[string]string {
	t.Helper()
	if _, err := c.PublishCRL(signer, 0); err != nil {
		t.Fatal(err)
	}
	return publishedSerials(t, c)
}
