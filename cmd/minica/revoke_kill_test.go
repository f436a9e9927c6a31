//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// revoke --reason keyCompromise killed with SIGKILL as it syncs the
// revocation log (strace kills it at the first fsync of db/revoked.log,
// after the write of the line's revocations, before any record changed)
// leaves a state that check completes: every certificate of the line
// revoked, and one CRL published that lists them.
func TestRevokeLineKilled(t *testing.T) {
	t.Parallel()
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Fatal("strace is required (Debian package strace)")
	}
	dir := newCADir(t)
	mustMinica(t, dir, "issue", "client", "alice")
	first := validSerials(t, dir, "alice")[0]
	mustMinica(t, dir, "renew", "alice")
	mustMinica(t, dir, "renew", "alice", "--force")
	mustMinica(t, dir, "crl")
	if got := validSerials(t, dir, "alice"); len(got) != 3 {
		t.Fatalf("alice has %d valid certificates; want 3", len(got))
	}
	kill := exec.Command(strace, "-f", "-o", os.DevNull, "-P", filepath.Join(dir, "db", "revoked.log"),
		"-e", "trace=fsync,fdatasync", "-e", "inject=fsync,fdatasync:signal=SIGKILL",
		"minica", "revoke", first, "--reason", "keyCompromise")
	kill.Env = append(os.Environ(), "MINICA_DIR="+dir)
	if b, err := kill.CombinedOutput(); err == nil {
		t.Fatalf("revoke under strace was not killed:\n%s", b)
	}
	out := mustMinica(t, dir, "check")
	if n := strings.Count(out, "repaired: completed the interrupted revocation change of alice"); n != 3 {
		t.Errorf("check after the kill completed %d revocations; want the 3 of the line\n%s", n, out)
	}
	if !strings.Contains(out, "with the 3 revocations it lacked") {
		t.Errorf("check did not publish the line's revocations:\n%s", out)
	}
	if got := validSerials(t, dir, "alice"); len(got) != 0 {
		t.Errorf("valid certificates of alice after check: %v; want none", got)
	}
	checkNothingToRepair(t, dir)
}
