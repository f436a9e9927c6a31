package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"minica/ca"
)

// minica runs the minica command (the test binary, installed on PATH by
// testscript.Main) with MINICA_DIR=dir and returns its output and status.
func minica(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return minicaWithEnv(t, nil, dir, args...)
}

// minicaWithEnv is minica with the extra environment variables env, for a
// parallel test (which cannot use t.Setenv).
func minicaWithEnv(t *testing.T, env []string, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("minica", args...)
	cmd.Env = append(append(os.Environ(), env...), "MINICA_DIR="+dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running minica %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

func mustMinica(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return mustMinicaWithEnv(t, nil, dir, args...)
}

// mustMinicaWithEnv is mustMinica with the extra environment variables env.
func mustMinicaWithEnv(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	out, errs, code := minicaWithEnv(t, env, dir, args...)
	if code != 0 {
		t.Fatalf("minica %s: exit %d\n%s", strings.Join(args, " "), code, errs)
	}
	return out
}

func newCADir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ca")
	mustMinica(t, dir, "init", "--cn", "Test Root", "--no-password")
	return dir
}

func dirHash(t *testing.T, dir string) string {
	t.Helper()
	h, err := hashTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// hashTree hashes every path, mode and content under root except the lock
// file, whose content (the last holder's pid) is informational.
func hashTree(root string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "lock" {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %o\n", rel, info.Mode())
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(data)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

// listRecords returns every record via `minica list --json`.
func listRecords(t *testing.T, dir string) []ca.Record {
	t.Helper()
	var recs []ca.Record
	for _, line := range strings.Split(strings.TrimSpace(mustMinica(t, dir, "list", "--json")), "\n") {
		if line == "" {
			continue
		}
		var r ca.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("list --json line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestConcurrentIssuance: 4 processes issuing 25 certificates each at the
// same time give 100 distinct serials, 100 records and 100 files.
func TestConcurrentIssuance(t *testing.T) {
	t.Parallel()
	dir := newCADir(t)
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				_, stderr, code := minica(t, dir, "issue", "client", fmt.Sprintf("w%d-%d", w, i))
				if code != 0 {
					errs <- stderr
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("issue failed: %s", e)
	}
	recs := listRecords(t, dir)
	serials := map[string]bool{}
	for _, r := range recs {
		serials[r.Serial] = true
		if r.Status != ca.StatusValid {
			t.Errorf("record %s has status %s", r.Serial, r.Status)
		}
	}
	certs := serialCerts(filepath.Join(dir, "certs", "*", "*.crt"))
	if len(recs) != 100 || len(serials) != 100 || len(certs) != 100 {
		t.Fatalf("got %d records, %d distinct serials, %d certificate files; want 100 each", len(recs), len(serials), len(certs))
	}
}

// TestKillDuringIssuance kills minica with SIGKILL at random moments of
// issuance; after each kill, check passes or repairs, no certificate lacks a
// record, and no temporary file is left.
func TestKillDuringIssuance(t *testing.T) {
	t.Parallel()
	dir := newCADir(t)
	start := time.Now()
	mustMinica(t, dir, "issue", "client", "warmup")
	span := time.Since(start)
	outcomes := map[string]int{}
	for i := range 50 {
		cmd := exec.Command("minica", "issue", "client", fmt.Sprintf("k%d", i))
		cmd.Env = append(os.Environ(), "MINICA_DIR="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.Int64N(int64(span))))
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		out := mustMinica(t, dir, "check")
		switch {
		case strings.Contains(out, "completed the interrupted"):
			outcomes["completed"]++
		case strings.Contains(out, "voided serial"):
			outcomes["voided"]++
		default:
			outcomes["clean"]++
		}
		assertConsistent(t, dir)
	}
	t.Logf("outcomes of 50 kills: %v", outcomes)
}

// assertConsistent checks the database invariants from outside.
func assertConsistent(t *testing.T, dir string) {
	t.Helper()
	byserial := map[string]ca.Record{}
	for _, r := range listRecords(t, dir) {
		byserial[r.Serial] = r
		if r.Status == ca.StatusPending {
			t.Errorf("record %s still pending after check", r.Serial)
		}
		if r.Status == ca.StatusValid {
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(r.CertPath()))); err != nil {
				t.Errorf("valid record %s has no certificate: %v", r.Serial, err)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "certs", "*", "*"))
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "current.") {
			continue // the links to the newest certificate
		}
		serial, _, _ := strings.Cut(filepath.Base(f), ".")
		if r, ok := byserial[serial]; !ok || r.Status != ca.StatusValid {
			t.Errorf("%s has no valid record (%+v)", f, r)
		}
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

// TestLockHeld: a mutation waits for the lock a bounded time, then fails
// naming the holder's pid, with nothing changed.
func TestLockHeld(t *testing.T) {
	t.Parallel()
	dir := newCADir(t)
	authority, err := ca.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer authority.Close()
	unlock, err := authority.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	before := dirHash(t, dir)
	start := time.Now()
	_, stderr, code := minica(t, dir, "issue", "client", "blocked", "--lock-timeout", "300ms")
	waited := time.Since(start)
	if code != 1 {
		t.Errorf("exit status %d; want 1", code)
	}
	want := fmt.Sprintf("minica: error: CA directory is locked by another minica process (pid %d, lock file %q)", os.Getpid(), filepath.Join(dir, "lock"))
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "minica: hint: wait for the other minica to finish") {
		t.Errorf("stderr = %q; want containing %q and a hint", stderr, want)
	}
	if waited < 300*time.Millisecond {
		t.Errorf("gave up after %v; want a wait of the full --lock-timeout", waited)
	}
	if dirHash(t, dir) != before {
		t.Error("the CA directory changed while the lock was held")
	}
	unlock()
	mustMinica(t, dir, "issue", "client", "blocked", "--lock-timeout", "300ms")
}
