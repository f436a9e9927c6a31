//go:build interop && unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"minica/ca"
	"minica/ca/store/pg"
	"minica/internal/pgtest"
)

// minicaEnv is minica with extra environment variables.
func minicaEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("minica", args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running minica %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

func mustEnv(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, errs, code := minicaEnv(t, env, args...)
	if code != 0 {
		t.Fatalf("minica %s: exit %d\n%s", strings.Join(args, " "), code, errs)
	}
	return out
}

// crlEntries lists the current CRL's entries (serial, time, reason) and
// number as the CA reads them from its store.
func crlEntries(t *testing.T, dir, store string) string {
	t.Helper()
	c, err := ca.OpenWith(dir, ca.OpenOptions{Store: store, Engines: storeEngines()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	crl, err := c.LoadCRL()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for e := range crl.Entries() {
		lines = append(lines, fmt.Sprintf("%x %s %s", e.Serial, e.RevokedAt.UTC().Format(time.RFC3339), e.Reason))
	}
	slices.Sort(lines)
	return fmt.Sprintf("number %s\n%s", crl.Number(), strings.Join(lines, "\n"))
}

// storeView is what a user sees of a store: every record, the report, the
// CRL's entries and the pending enrollments.
func storeView(t *testing.T, dir, store string) [4]string {
	env := []string{"MINICA_DIR=" + dir, "MINICA_STORE=" + store, "MINICA_TEST_NOW=2030-01-02T03:04:05Z"}
	return [4]string{
		mustEnv(t, env, "list", "--json"),
		mustEnv(t, env, "report"),
		crlEntries(t, dir, store),
		mustEnv(t, env, "enroll", "--list"),
	}
}

// store copy is lossless both ways: files to PostgreSQL, and PostgreSQL to
// the files of another directory of the same CA, give the same records,
// report, CRL and enrollments; a copy into a store that is not empty is
// refused and changes nothing.
func TestStoreCopyLossless(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t)
	base := t.TempDir()
	a := filepath.Join(base, "a")
	env := []string{"MINICA_DIR=" + a, "MINICA_TEST_NOW=2030-01-02T03:04:05Z"}
	mustEnv(t, env, "init", "--cn", "Root", "--no-password", "--enroll-url", "https://pki.example.com")
	mustEnv(t, env, "issue", "client", "alice", "--email", "alice@example.com")
	mustEnv(t, env, "issue", "client", "bob")
	mustEnv(t, env, "issue", "server", "web", "--dns", "web.example.com")
	mustEnv(t, env, "renew", "alice")
	mustEnv(t, env, "revoke", "--reason", "keyCompromise", "bob")
	mustEnv(t, env, "enroll", "carol", "--email", "carol@example.com", "--json")
	want := storeView(t, a, "file")
	if !strings.Contains(want[2], "keyCompromise") || strings.Count(want[0], "\n") != 4 {
		t.Fatalf("the source is not what the test made:\n%s\n%s", want[0], want[2])
	}

	out := mustEnv(t, env, "store", "copy", "--to", url)
	if !strings.HasPrefix(out, "copied 4 records, 1 revocations and 1 enrollments to ") {
		t.Fatalf("store copy said %q", out)
	}
	if got := storeView(t, a, url); got != want {
		t.Fatalf("after the copy to PostgreSQL:\n%v\nwant:\n%v", got, want)
	}
	_, errs, code := minicaEnv(t, env, "store", "copy", "--to", url)
	if code != 1 || !strings.Contains(errs, "minica: error: copying to") || !strings.Contains(errs, "the target store is not empty") {
		t.Fatalf("second copy: exit %d\n%s", code, errs)
	}
	if got := storeView(t, a, url); got != want {
		t.Fatalf("a refused copy changed the target:\n%v", got)
	}

	// Back to files, in a second directory of the same CA.
	b := filepath.Join(base, "b")
	for _, d := range []string{"db/names", "certs"} {
		if err := os.MkdirAll(filepath.Join(b, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"ca.crt", "ca.key", "chain.pem", "settings.json"} {
		data, err := os.ReadFile(filepath.Join(a, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mustEnv(t, []string{"MINICA_DIR=" + a, "MINICA_STORE=" + url}, "store", "copy", "--to", b)
	if got := storeView(t, b, "file"); got != want {
		t.Fatalf("after the copy back to files:\n%v\nwant:\n%v", got, want)
	}
	// And the copy is a working CA: it revokes and publishes.
	mustEnv(t, []string{"MINICA_DIR=" + b}, "revoke", "web")
	if !strings.Contains(crlEntries(t, b, "file"), "unspecified") {
		t.Fatal("the copied CA did not publish the new revocation")
	}
}

// Four processes issuing 25 certificates each at once into one PostgreSQL
// store give 100 distinct serials and 100 records, and check passes.
func TestStoreConcurrentIssuance(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t)
	dir := filepath.Join(t.TempDir(), "ca")
	env := []string{"MINICA_DIR=" + dir, "MINICA_STORE=" + url}
	mustEnv(t, env, "init", "--cn", "Root", "--no-password")
	var wg sync.WaitGroup
	errs := make([]string, 4)
	for p := range 4 {
		var csv strings.Builder
		csv.WriteString("name\n")
		for i := range 25 {
			fmt.Fprintf(&csv, "p%du%d\n", p, i)
		}
		file := filepath.Join(t.TempDir(), "rows.csv")
		if err := os.WriteFile(file, []byte(csv.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if _, e, code := minicaEnv(t, env, "--lock-timeout", "2m", "issue", "client", "--from", file); code != 0 {
				errs[p] = e
			}
		})
	}
	wg.Wait()
	for p, e := range errs {
		if e != "" {
			t.Fatalf("process %d failed:\n%s", p, e)
		}
	}
	serials, names := map[string]bool{}, map[string]bool{}
	for _, r := range recordsEnv(t, env) {
		serials[r.Serial] = true
		names[r.Name] = true
		if r.Status != "valid" {
			t.Errorf("record %s of %s is %s", r.Serial, r.Name, r.Status)
		}
	}
	if len(serials) != 100 || len(names) != 100 {
		t.Fatalf("%d serials and %d names; want 100 of each", len(serials), len(names))
	}
	if out := mustEnv(t, env, "check"); !strings.HasPrefix(out, "100 records, 0 repaired, 0 problems") {
		t.Fatalf("check: %s", out)
	}
}

func recordsEnv(t *testing.T, env []string) []listRecord {
	t.Helper()
	var recs []listRecord
	for line := range strings.Lines(mustEnv(t, env, "list", "--json")) {
		var r listRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("list --json: %v", err)
		}
		recs = append(recs, r)
	}
	return recs
}

// An issuance or a revocation into PostgreSQL killed with SIGKILL at a
// random point leaves a state that check passes or repairs: a second check
// finds nothing to do, every certificate file has a record, and a
// revocation that reached the log is on the CRL.
func TestStoreKilled(t *testing.T) {
	t.Parallel()
	const trials = 30
	url := pgtest.New(t)
	dir := filepath.Join(t.TempDir(), "ca")
	env := []string{"MINICA_DIR=" + dir, "MINICA_STORE=" + url}
	mustEnv(t, env, "init", "--cn", "Root", "--no-password")
	// Kills land anywhere within the time a whole command takes here.
	start := time.Now()
	mustEnv(t, env, "issue", "client", "warmup")
	span := max(time.Since(start)*6/5, 10*time.Millisecond)
	repaired := 0
	for trial := range trials {
		name := fmt.Sprintf("u%d", trial)
		args := []string{"issue", "client", name}
		if trial%3 == 2 {
			mustEnv(t, env, "issue", "client", name)
			args = []string{"revoke", "--reason", "keyCompromise", name}
		}
		cmd := exec.Command("minica", args...)
		cmd.Env = append(os.Environ(), env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(rand.N(span))
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		out, errs, code := minicaEnv(t, env, "check")
		if code != 0 {
			t.Fatalf("trial %d: check after the kill: exit %d\n%s%s", trial, code, out, errs)
		}
		if !strings.Contains(out, " 0 repaired, ") {
			repaired++
		}
		if out := mustEnv(t, env, "check"); !regexp.MustCompile(`^\d+ records, 0 repaired, 0 problems`).MatchString(out) {
			t.Fatalf("trial %d: second check: %s", trial, out)
		}
		have := map[string]bool{}
		for _, r := range recordsEnv(t, env) {
			have[r.Serial] = true
		}
		files, _ := filepath.Glob(filepath.Join(dir, "certs", "*", "*.crt"))
		for _, f := range files {
			if s := strings.TrimSuffix(filepath.Base(f), ".crt"); s != "current" && !have[s] {
				t.Errorf("trial %d: certificate %s has no record", trial, f)
			}
		}
	}
	// Every revocation the log holds is on the CRL: check published it.
	c, err := ca.OpenWith(dir, ca.OpenOptions{Engines: storeEngines()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	crl, err := c.LoadCRL()
	if err != nil {
		t.Fatal(err)
	}
	if missing, err := c.Unpublished(crl); err != nil || len(missing) != 0 {
		t.Fatalf("revocations not on the CRL after check: %v, %v", missing, err)
	}
	t.Logf("%d trials killed within %s, %d left something to repair", trials, span, repaired)
}

// store migrate creates the schema, does nothing the second time, and
// refuses a newer schema; init --store migrates and records the store in
// the settings, so that later commands find it without --store.
func TestStoreMigrateAndInit(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t)
	env := []string{"MINICA_STORE=" + url}
	if out := mustEnv(t, env, "store", "migrate"); out != fmt.Sprintf("store %s migrated from schema version 0 to %d\n", url, pg.SchemaVersion) {
		t.Fatalf("first migrate: %q", out)
	}
	var res struct {
		Store    string
		From, To int
	}
	if out := mustEnv(t, env, "store", "migrate", "--json"); json.Unmarshal([]byte(out), &res) != nil || res.Store != url || res.From != pg.SchemaVersion || res.To != pg.SchemaVersion {
		t.Fatalf("second migrate: %q", out)
	}
	dir := filepath.Join(t.TempDir(), "ca")
	mustEnv(t, env, "--dir", dir, "init", "--cn", "Root", "--no-password")
	settings, err := os.ReadFile(filepath.Join(dir, "settings.json"))
	var set struct{ Store string }
	if err != nil || json.Unmarshal(settings, &set) != nil || set.Store != url {
		t.Fatalf("settings.json after init --store: %s (%v)", settings, err)
	}
	plain := []string{"MINICA_DIR=" + dir}
	mustEnv(t, plain, "issue", "client", "alice")
	if recs := recordsEnv(t, plain); len(recs) != 1 || recs[0].Name != "alice" {
		t.Fatalf("records through the settings' store: %v", recs)
	}
	for _, f := range []string{"crlnumber", "db/revoked.log"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s in the directory of a CA on PostgreSQL", f)
		}
	}
	future := pg.SchemaVersion + 1
	pgtest.Exec(t, url, fmt.Sprintf("INSERT INTO minica_schema (version, name) VALUES (%d, '%04d_future.sql')", future, future))
	newer := fmt.Sprintf("has schema version %d, newer than this minica knows (%d)", future, pg.SchemaVersion)
	for _, args := range [][]string{{"store", "migrate"}, {"list"}} {
		_, errs, code := minicaEnv(t, plain, args...)
		if code != 1 || !strings.Contains(errs, newer) ||
			!strings.Contains(errs, "minica: hint: upgrade minica; it never writes to a newer schema") {
			t.Fatalf("%v on a newer schema: exit %d\n%s", args, code, errs)
		}
	}
}

// `store copy --use` while a `minica serve` of the CA runs would split the
// database (serve goes on recording its renewals in the store it opened):
// it is refused, saying which serve and what to do, before anything is
// copied. Once serve has stopped, the switch goes through. On PostgreSQL
// a replica on another host counts too: it is registered in the store.
func TestStoreSwitchWhileServing(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t)
	dir := filepath.Join(t.TempDir(), "ca")
	mustMinica(t, dir, "init", "--cn", "Root", "--no-password")
	mustMinica(t, dir, "issue", "client", "alice", "--email", "alice@example.com")
	p := startServe(t, dir)
	settings := readTestFile(t, filepath.Join(dir, "settings.json"))
	_, stderr, code := minica(t, dir, "store", "copy", "--to", url, "--use")
	if code != 1 || !strings.Contains(stderr, "minica: error: a minica serve of this CA is running (on the CA directory \""+dir+"\")") ||
		!strings.Contains(stderr, "minica: hint: stop every minica serve of this CA") {
		t.Fatalf("store copy --use while serve runs: exit %d\n%s", code, stderr)
	}
	if got := readTestFile(t, filepath.Join(dir, "settings.json")); !bytes.Equal(got, settings) {
		t.Errorf("a refused switch changed the settings:\n%s", got)
	}
	// Refused before anything was done: the target is not even migrated.
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	var table *string
	err = conn.QueryRow(context.Background(), "SELECT to_regclass('minica_records')::text").Scan(&table)
	conn.Close(context.Background())
	if err != nil || table != nil {
		t.Errorf("a refused switch wrote into the target (minica_records: %v, %v)", table, err)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		p.exited <- err
	case <-time.After(10 * time.Second):
		t.Fatal("minica serve still running 10s after SIGTERM")
	}
	if out := mustMinica(t, dir, "store", "copy", "--to", url, "--use"); !strings.Contains(out, "the CA now uses "+url) {
		t.Fatalf("store copy --use once serve stopped said %q", out)
	}

	// A replica on another host serves the PostgreSQL store: a switch
	// away from it, from this host, is refused, naming the replica's pid.
	rep := startServe(t, replicaDir(t, dir))
	other := pgtest.New(t)
	_, stderr, code = minica(t, dir, "store", "copy", "--to", other, "--use")
	want := fmt.Sprintf("minica: error: a minica serve of this CA is running (on the store %q, pid %d)", url, rep.cmd.Process.Pid)
	if code != 1 || !strings.Contains(stderr, want) {
		t.Fatalf("store copy --use while a replica serves the store: exit %d\n%s\nwant %s", code, stderr, want)
	}
	if s, _ := ca.SettingsStore(dir); s != url {
		t.Errorf("a refused switch recorded store %q", s)
	}
}
