//go:build interop

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"minica/ca/store/pg"
	"minica/internal/pgtest"
)

// unreachableStore refuses connections at once: nothing listens on port 1.
const unreachableStore = "postgres://minica@127.0.0.1:1/minica?sslmode=disable&connect_timeout=5"

// A store that cannot be reached at start: every command fails with an
// error naming the store, exits 1, and writes nothing into the CA
// directory (init creates none).
func TestPGStoreUnreachable(t *testing.T) {
	t.Parallel()
	dir, _ := newPGCADir(t, "")
	settings := filepath.Join(dir, "settings.json")
	data := readTestFile(t, settings)
	var s map[string]any
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	s["store"] = unreachableStore
	data, _ = json.MarshalIndent(s, "", "  ")
	if err := os.WriteFile(settings, data, 0o600); err != nil {
		t.Fatal(err)
	}
	before := dirHash(t, dir)
	for _, args := range [][]string{
		{"issue", "client", "simon"},
		{"revoke", "simon"},
		{"list"},
		{"crl"},
		{"check"},
		{"serve", "--listen", "127.0.0.1:0"},
	} {
		_, stderr, code := minica(t, dir, args...)
		if code != 1 || !strings.Contains(stderr, "minica: error: connecting to the store \""+unreachableStore+"\"") || strings.Contains(stderr, "goroutine") {
			t.Errorf("minica %s: exit %d\n%s\nwant exit 1 and an error naming the store", strings.Join(args, " "), code, stderr)
		}
	}
	if dirHash(t, dir) != before {
		t.Errorf("the CA directory changed")
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
	_, stderr, code := minica(t, fresh, "init", "--cn", "Test Root", "--no-password", "--store", unreachableStore)
	if code != 1 || !strings.Contains(stderr, unreachableStore) {
		t.Errorf("init --store unreachable: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("init left %s behind: %v", fresh, err)
	}
}

// A store that takes no writes (a database whose sessions default to
// read-only, as behind a replica's endpoint) is refused at open with the
// reason, before anything is signed or written.
func TestPGStoreReadOnly(t *testing.T) {
	t.Parallel()
	dir, store := newPGCADir(t, "")
	mustMinica(t, dir, "issue", "client", "bob")
	u, err := url.Parse(store)
	if err != nil {
		t.Fatal(err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	pgtest.Exec(t, store, "ALTER DATABASE "+db+" SET default_transaction_read_only = on")
	before := dirHash(t, dir)
	for _, args := range [][]string{{"issue", "client", "simon"}, {"revoke", "bob"}, {"list"}} {
		_, stderr, code := minica(t, dir, args...)
		if code != 1 || !strings.Contains(stderr, "minica: error: the store is read-only: \""+store+"\" takes no writes (transaction_read_only is on)") {
			t.Errorf("minica %s: exit %d\n%s\nwant exit 1 and the read-only store named", strings.Join(args, " "), code, stderr)
		}
	}
	if dirHash(t, dir) != before {
		t.Errorf("the CA directory changed")
	}
}

// The CA lock's session ends in the middle of a batch: PostgreSQL
// restarted (pg_ctl restart), or the session terminated
// (pg_terminate_backend). The batch stops with exit 1 and an error saying
// the lock was lost and what to do; check passes or repairs; the same
// command again issues exactly the rows left: every row then has exactly
// one valid record and its certificate, and check finds nothing to repair.
func TestPGStoreLockLostDuringBatch(t *testing.T) {
	t.Parallel()
	srv := pgtest.Own(t)
	for _, tt := range []struct {
		name  string
		fault func(t *testing.T, store string)
	}{
		{name: "restart", fault: func(t *testing.T, _ string) {
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "terminate", fault: func(t *testing.T, store string) {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var ok bool
			if err := conn.QueryRow(ctx, `SELECT pg_terminate_backend(pid, 5000) FROM pg_locks
				WHERE locktype = 'advisory' AND granted AND classid = $1 AND objid = $2`, uint32(pg.LockClass), uint32(pg.LockCA)).Scan(&ok); err != nil || !ok {
				t.Fatalf("terminating the lock's session: %v, %v", ok, err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) { testLockLostDuringBatch(t, srv, tt.fault) })
	}
}

func testLockLostDuringBatch(t *testing.T, srv *pgtest.Server, fault func(t *testing.T, store string)) {
	store, err := srv.CreateDatabase()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ca")
	mustMinica(t, dir, "init", "--cn", "Test Root", "--no-password", "--store", store)
	const rows = 600
	var csv strings.Builder
	csv.WriteString("name\n")
	for i := range rows {
		fmt.Fprintf(&csv, "user%04d\n", i)
	}
	from := filepath.Join(t.TempDir(), "staff.csv")
	if err := os.WriteFile(from, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("minica", "issue", "client", "--from", from)
	cmd.Env = append(os.Environ(), "MINICA_DIR="+dir)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The fault once a tenth of the rows are in.
	count := func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, store)
		if err != nil {
			return -1
		}
		defer conn.Close(ctx)
		var n int
		conn.QueryRow(ctx, "SELECT count(*) FROM minica_records").Scan(&n)
		return n
	}
	for deadline := time.Now().Add(60 * time.Second); count() < rows/10; {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the batch issued fewer than %d rows in 60s\n%s", rows/10, &stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	fault(t, store)
	restarted := count()
	var code int
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the batch still runs 2 minutes after the fault\n%s", &stderr)
	}
	t.Logf("fault with %d records in; the batch exited %d: %s", restarted, code, errorLine(stderr.String()))
	if restarted >= rows {
		t.Fatalf("the batch finished before the fault: make it longer")
	}
	if msg := errorLine(stderr.String()); code != 1 || !strings.Contains(msg, store) ||
		!strings.Contains(msg, "the CA lock of the store was lost: its session (backend pid ") ||
		!strings.Contains(msg, "this command wrote nothing more and stopped") ||
		!strings.Contains(stderr.String(), "minica: hint: run 'minica check', which repairs what the command left") {
		t.Errorf("the interrupted batch: exit %d\n%s\nwant 1 with an error naming the store and saying the lock was lost", code, &stderr)
	}
	// check passes or repairs what the batch left.
	if out, stderr, code := minica(t, dir, "check"); code != 0 {
		t.Errorf("check after the fault: exit %d\n%s%s", code, out, stderr)
	}
	if strings.Contains(stderr.String(), "goroutine ") || strings.Contains(stderr.String(), "panic") {
		t.Errorf("the batch panicked:\n%s", &stderr)
	}
	out := mustMinica(t, dir, "issue", "client", "--from", from)
	t.Logf("the re-run: %s", lastLine(out))
	check := mustMinica(t, dir, "check")
	if !strings.Contains(check, " 0 repaired, 0 problems") {
		t.Errorf("check after the re-run:\n%s\nwant nothing left to repair", check)
	}

	valid := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(mustMinica(t, dir, "list", "--json")), "\n") {
		var r struct{ Name, Status, Serial string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("list --json line %q: %v", line, err)
		}
		switch r.Status {
		case "valid":
			valid[r.Name]++
			if _, err := os.Stat(filepath.Join(dir, "certs", r.Name, r.Serial+".crt")); err != nil {
				t.Errorf("%s's valid record %s has no certificate: %v", r.Name, r.Serial, err)
			}
		case "pending":
			t.Errorf("a pending record after check: %s", line)
		}
	}
	for i := range rows {
		if n := valid[fmt.Sprintf("user%04d", i)]; n != 1 {
			t.Errorf("user%04d has %d valid records; want 1", i, n)
		}
	}
	if len(valid) != rows {
		t.Errorf("%d names have valid records; want %d", len(valid), rows)
	}
}

// errorLine returns the "minica: error:" line of stderr.
func errorLine(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "minica: error: ") {
			return l
		}
	}
	return ""
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// While PostgreSQL is down, serve's /healthz answers 503 and says the
// store does not answer, and /metrics has minica_serve_store_up 0 (OCSP
// would answer internalError, renewals 500: a load balancer must know);
// once it is back, serve is healthy again without a restart.
func TestServeHealthReportsStorePG(t *testing.T) {
	t.Parallel()
	srv := pgtest.Own(t)
	store, err := srv.CreateDatabase()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ca")
	mustMinica(t, dir, "init", "--cn", "Test Root", "--no-password", "--store", store)
	p := startServe(t, dir)
	// waitHealth polls /healthz (bounded) until it answers code with a
	// body holding want, and returns the metrics then.
	waitHealth := func(code int, want string) string {
		t.Helper()
		var last string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			resp, body := p.fetch(t, "/healthz")
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
			if resp.StatusCode == code && strings.Contains(string(body), want) {
				_, m := p.fetch(t, "/metrics")
				return string(m)
			}
		}
		t.Fatalf("/healthz = %s; want %d with %q\nserve:\n%s", last, code, want, p.stderr)
		return ""
	}
	if m := waitHealth(200, "store-up: true\n"); !strings.Contains(m, "\nminica_serve_store_up 1\n") {
		t.Errorf("metrics while the store answers lack minica_serve_store_up 1:\n%s", m)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	m := waitHealth(503, "unavailable: the store \""+store+"\" does not answer")
	if !strings.Contains(m, "\nminica_serve_store_up 0\n") {
		t.Errorf("metrics while the store is down lack minica_serve_store_up 0:\n%s", m)
	}
	if !strings.Contains(p.stderr.String(), "store-unreachable") {
		t.Errorf("no store-unreachable line in the log:\n%s", p.stderr)
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	if m := waitHealth(200, "store-up: true\n"); !strings.Contains(m, "\nminica_serve_store_up 1\n") {
		t.Errorf("metrics once the store is back lack minica_serve_store_up 1:\n%s", m)
	}
}
