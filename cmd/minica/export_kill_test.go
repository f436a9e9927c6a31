//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// export p12 --password-out killed with SIGKILL as it gives the bundle or
// its password file its name (strace kills it at the first system call
// that creates, links or renames that path) never leaves a bundle without
// its password; the same command run again settles what the kill left, so
// that both files exist and the password opens the bundle. With --force
// the files replaced are then both the new ones.
func TestExportP12KilledWritesBothOrNeither(t *testing.T) {
	t.Parallel()
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Fatal("strace is required (Debian package strace)")
	}
	for _, tc := range []struct {
		name   string
		target string // the path whose first creation, link or rename is killed
		force  bool
	}{
		{"at the password file", "pw.txt", false},
		{"at the bundle", "alice.p12", false},
		{"at the password file, replacing", "pw.txt", true},
		{"at the bundle, replacing", "alice.p12", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newCADir(t)
			mustMinica(t, dir, "issue", "client", "alice")
			out := t.TempDir()
			p12, pw := filepath.Join(out, "alice.p12"), filepath.Join(out, "pw.txt")
			args := []string{"export", "p12", "alice", "--out", p12, "--password-out", pw}
			if tc.force {
				mustMinica(t, dir, args...)
				args = append(args, "--force")
			}
			old := readOrEmpty(t, pw)
			kill := exec.Command(strace, append([]string{"-f", "-o", os.DevNull, "-P", filepath.Join(out, tc.target),
				"-e", "trace=openat,linkat,renameat,renameat2",
				"-e", "inject=openat,linkat,renameat,renameat2:signal=SIGKILL", "minica"}, args...)...)
			kill.Env = append(os.Environ(), "MINICA_DIR="+dir)
			if b, err := kill.CombinedOutput(); err == nil {
				t.Fatalf("export p12 under strace was not killed:\n%s", b)
			}
			if exists(t, p12) && !exists(t, pw) {
				t.Errorf("after the kill %s exists without its password file %s", p12, pw)
			}
			if exists(t, p12) && exists(t, pw) {
				checkP12Opens(t, dir, p12, pw)
			}
			_, errs, _ := minica(t, dir, args...)
			if !exists(t, p12) || !exists(t, pw) {
				t.Fatalf("after the rerun: bundle %v, password file %v; want both\n%s", exists(t, p12), exists(t, pw), errs)
			}
			checkP12Opens(t, dir, p12, pw)
			if tc.force && readOrEmpty(t, pw) == old {
				t.Errorf("the password file still holds the old password after export --force")
			}
			if leftovers, _ := filepath.Glob(filepath.Join(out, ".tmp-*")); len(leftovers) > 0 {
				t.Errorf("files left beside the outputs: %v", leftovers)
			}
		})
	}
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

func readOrEmpty(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// checkP12Opens checks that the password in pw opens the bundle p12.
func checkP12Opens(t *testing.T, dir, p12, pw string) {
	t.Helper()
	out, errs, code := minica(t, dir, "inspect", p12, "--password-file", pw)
	if code != 0 || !strings.Contains(out, "alice") {
		t.Errorf("inspect %s with %s: exit %d\n%s%s", p12, pw, code, out, errs)
	}
}
