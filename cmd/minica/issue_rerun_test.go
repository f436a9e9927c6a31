package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// interruptIssue turns the certificate of name that dir's CA just issued
// into what a SIGKILL of issue leaves at its second or third fsync: the
// record pending (its completion, appended after the certificate's files
// are synced, never written) and no current.* links. With certLost the
// certificate and chain did not reach the disk either (a kill before they
// were written). It returns the serial.
func interruptIssue(t *testing.T, dir, name string, certLost bool) string {
	t.Helper()
	var rec struct{ Serial string }
	if err := json.Unmarshal([]byte(mustMinica(t, dir, "show", name, "--json")), &rec); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "db", rec.Serial[:2], rec.Serial+".json")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pending, _, _ := strings.Cut(string(data), "\n")
	if !strings.Contains(pending, `"status":"pending"`) {
		t.Fatalf("the first line of %s is %q; want the pending reservation", file, pending)
	}
	if err := os.WriteFile(file, []byte(pending+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	remove := []string{"current.crt", "current.key", "current.chain.pem"}
	if certLost {
		remove = append(remove, rec.Serial+".crt", rec.Serial+".chain.pem")
	}
	for _, f := range remove {
		if err := os.Remove(filepath.Join(dir, "certs", name, f)); err != nil {
			t.Fatal(err)
		}
	}
	return rec.Serial
}

// The same issue run again after a kill, without check, first settles the
// interrupted issuance of the name as check would: a certificate that
// reached the disk is completed, and then holds the name (no second valid
// certificate without --force); one that did not is voided, and the rerun
// issues. check afterwards has nothing left to repair.
func TestIssueRerunSettlesInterrupted(t *testing.T) {
	t.Parallel()
	t.Run("certificate on disk", func(t *testing.T) {
		dir := newCADir(t)
		mustMinica(t, dir, "issue", "client", "alice", "--email", "alice@example.com")
		serial := interruptIssue(t, dir, "alice", false)
		_, errs, code := minica(t, dir, "issue", "client", "alice", "--email", "alice@example.com")
		if code != 1 {
			t.Fatalf("rerun: exit %d; want 1 (the name is taken)\n%s", code, errs)
		}
		for _, want := range []string{
			"minica: note: completed the interrupted issuance of alice (serial " + serial + ")\n",
			`minica: error: a certificate named "alice" already exists (serial ` + serial + ")\n",
		} {
			if !strings.Contains(errs, want) {
				t.Errorf("rerun stderr:\n%s\nwant %q", errs, want)
			}
		}
		if got := validSerials(t, dir, "alice"); len(got) != 1 || got[0] != serial {
			t.Errorf("valid certificates of alice: %v; want only %s", got, serial)
		}
		if target, err := os.Readlink(filepath.Join(dir, "certs", "alice", "current.crt")); err != nil || target != serial+".crt" {
			t.Errorf("current.crt -> %q, %v; want %s.crt", target, err, serial)
		}
		checkNothingToRepair(t, dir)
	})
	t.Run("certificate lost", func(t *testing.T) {
		dir := newCADir(t)
		mustMinica(t, dir, "issue", "client", "alice")
		serial := interruptIssue(t, dir, "alice", true)
		out, errs, code := minica(t, dir, "issue", "client", "alice")
		if code != 0 {
			t.Fatalf("rerun: exit %d\n%s", code, errs)
		}
		if want := "minica: note: voided serial " + serial + " of alice: its issuance was interrupted before the certificate was written\n"; !strings.Contains(errs, want) {
			t.Errorf("rerun stderr:\n%s\nwant %q", errs, want)
		}
		got := validSerials(t, dir, "alice")
		if len(got) != 1 || got[0] == serial || !strings.Contains(out, got[0]) {
			t.Errorf("valid certificates of alice: %v; want the one the rerun issued", got)
		}
		checkNothingToRepair(t, dir)
	})
}

// validSerials lists the serials of name's valid certificates.
func validSerials(t *testing.T, dir, name string) []string {
	t.Helper()
	var serials []string
	for line := range strings.Lines(mustMinica(t, dir, "list", "--json")) {
		var r struct{ Serial, Name, Status string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Name == name && r.Status == "valid" {
			serials = append(serials, r.Serial)
		}
	}
	return serials
}

func checkNothingToRepair(t *testing.T, dir string) {
	t.Helper()
	out := mustMinica(t, dir, "check")
	if !regexp.MustCompile(`(?m)^\d+ records, 0 repaired, 0 problems$`).MatchString(out) {
		t.Errorf("check after the rerun:\n%s\nwant nothing repaired", out)
	}
}
