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

	rep, err := c.CheckWith(CheckOptions{Signer: func() (crypto.Signer, error) { return signer, nil }})
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
			wantErr: "no space left on device; cutting the partial line off failed too (read-only file system), so the log ends in a partial line (corrupt revocation log)"},
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

// TestCheckRepairsTornRevocationLog builds the logs that appends cut short
// by a full disk left before appends were cut back (a torn start of a line
// with the next, acknowledged revocation run on after it), and damaged
// lines. Check drops what it can prove no one was told had landed, restores
// a damaged line from its certificate's record, and reports what it cannot
// attribute. Alice and carol are revoked (records and log); bob is valid.
func TestCheckRepairsTornRevocationLog(t *testing.T) {
	tests := []struct {
		name string
		// log builds the revocation log from alice's and carol's lines
		// (each with its newline) and bob's serial.
		log         func(alice, carol, bob string) string
		wantRepair  string // "" means none
		wantProblem string // "" means none
		wantCRL     []string
	}{
		{
			name:       "torn start before a whole line",
			log:        func(a, c, b string) string { return a + `{"serial":"` + b + `","revoked_at":"20` + c },
			wantRepair: "dropped the unfinished start of an entry (an interrupted append) from line 2 of the revocation log",
			wantCRL:    []string{"alice", "carol"},
		},
		{
			name:       "several torn starts before a whole line",
			log:        func(a, c, b string) string { return a + `{"ser` + `{"serial":"` + b[:9] + `{` + c },
			wantRepair: "dropped the unfinished start of an entry (an interrupted append) from line 2 of the revocation log",
			wantCRL:    []string{"alice", "carol"},
		},
		{
			name: "an entry without its newline before a whole line",
			log: func(a, c, b string) string {
				return a + `{"serial":"` + b + `","revoked_at":"2030-01-02T03:04:05Z","reason":"keyCompromise","not_after":"2031-01-02T03:04:05Z"}` + c
			},
			wantRepair: "dropped the unfinished start of an entry (an interrupted append) from line 2 of the revocation log",
			wantCRL:    []string{"alice", "carol"},
		},
		{
			name:       "torn last line",
			log:        func(a, c, b string) string { return a + c + `{"serial":"` + b },
			wantRepair: "dropped the unfinished last line of the revocation log",
			wantCRL:    []string{"alice", "carol"},
		},
		{
			name:       "damaged line of a revoked certificate",
			log:        func(a, c, b string) string { return a + c[:62] + "\x00\x00\x00" + c[65:] },
			wantRepair: "replaced the damaged line 2 of the revocation log with the state of the record of carol",
			wantCRL:    []string{"alice", "carol"},
		},
		{
			name: "damaged line of a valid certificate",
			log: func(a, c, b string) string {
				return a + c + `{"serial":"` + b + `","revoked_at":"2030-01-02T03:04:05Z","reason":"keyCompro` + "\n"
			},
			wantRepair: "replaced the damaged line 3 of the revocation log with the state of the record of bob",
			wantCRL:    []string{"alice", "carol"},
		},
		{
			name:       "empty line",
			log:        func(a, c, b string) string { return a + "\n" + c },
			wantRepair: "dropped the empty line 2 of the revocation log",
			wantCRL:    []string{"alice", "carol"},
		},
		{
			name:        "line too long",
			log:         func(a, c, b string) string { return a + strings.Repeat(" ", 70<<10) + c },
			wantProblem: "line 2 is too long",
		},
		{
			name:        "damaged line naming no certificate",
			log:         func(a, c, b string) string { return a + "garbage\n" + c },
			wantProblem: "line 2 of the revocation log",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, signer := newTestCA(t, InitOptions{})
			serials := map[string]*big.Int{}
			lines := map[string]string{}
			logPath := c.Path(revlogFile)
			for _, name := range []string{"alice", "bob", "carol"} {
				is, err := c.Issue(signer, Request{Name: name, Profile: Client})
				if err != nil {
					t.Fatal(err)
				}
				serials[name] = is.Cert.SerialNumber
				if name == "bob" {
					continue
				}
				before, _ := os.ReadFile(logPath)
				if _, err := c.Revoke(is.Cert.SerialNumber, revoke.KeyCompromise); err != nil {
					t.Fatal(err)
				}
				after, _ := os.ReadFile(logPath)
				lines[name] = string(after[len(before):])
			}
			if _, err := c.PublishCRL(signer, 0); err != nil {
				t.Fatal(err)
			}
			torn := tt.log(lines["alice"], lines["carol"], SerialHex(serials["bob"]))
			if err := os.WriteFile(logPath, []byte(torn), 0o644); err != nil {
				t.Fatal(err)
			}

			rep, err := c.Check()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(rep.Problems, "\n"); tt.wantProblem == "" && got != "" || !strings.Contains(got, tt.wantProblem) {
				t.Fatalf("Check() problems = %q; want one containing %q", rep.Problems, tt.wantProblem)
			}
			if tt.wantProblem != "" {
				if after, _ := os.ReadFile(logPath); string(after) != torn {
					t.Fatalf("log after Check() = %q; want it unchanged", after)
				}
				return
			}
			if len(rep.Repaired) != 1 || !strings.Contains(rep.Repaired[0], tt.wantRepair) {
				t.Fatalf("Check() repaired %q; want one repair containing %q", rep.Repaired, tt.wantRepair)
			}
			got := publishedAfter(t, c, signer)
			if len(got) != len(tt.wantCRL) {
				t.Errorf("the CRL lists %v; want %v", got, tt.wantCRL)
			}
			for _, name := range tt.wantCRL {
				if got[SerialHex(serials[name])] != "keyCompromise" {
					t.Errorf("the CRL lists %v; want %s (keyCompromise)", got, name)
				}
			}
			if rec, _ := c.Record(serials["bob"]); rec.Status != StatusValid {
				t.Errorf("bob is %s after Check(); want valid", rec.Status)
			}
			again, err := c.Check()
			if err != nil || len(again.Repaired)+len(again.Problems) > 0 {
				t.Errorf("second Check() = repaired %q, problems %q, %v; want nothing to do", again.Repaired, again.Problems, err)
			}
			if _, err := c.Revoke(serials["bob"], revoke.Superseded); err != nil {
				t.Errorf("Revoke() after Check(): %v", err)
			}
		})
	}
}
