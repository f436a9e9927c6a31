//go:build interop

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/internal/pgtest"
	"minica/revoke"
)

// A backup restored after a revocation never un-revokes: pg_dump, revoke,
// pg_restore of the dump (the store now says valid), then check re-applies
// the revocation from the published copy in the CA directory, or, on a
// host without one, from a CRL copy given with --crl, and publishes a CRL
// that lists it again, numbered above every CRL published before.
func TestPGRestoredBackupKeepsRevocations(t *testing.T) {
	t.Parallel()
	pgDump, pgRestore := pgTool(t, "pg_dump"), pgTool(t, "pg_restore")
	dir, store := newPGCADir(t, "")
	mustMinica(t, dir, "issue", "client", "simon")
	mustMinica(t, dir, "issue", "client", "bob")
	mustMinica(t, dir, "crl")
	dump := filepath.Join(t.TempDir(), "backup.dump")
	if out, err := exec.Command(pgDump, "-Fc", "-f", dump, store).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	mustMinica(t, dir, "revoke", "simon", "--reason", "keyCompromise")
	simon := serialOf(t, dir, "simon")
	published := readTestFile(t, filepath.Join(dir, "crl.der"))
	proxyCopy := filepath.Join(t.TempDir(), "proxy-copy.crl")
	if err := os.WriteFile(proxyCopy, published, 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := revoke.ParseCRL(published, caCert(t, dir))
	if err != nil || !listed(before, simon) {
		t.Fatalf("the CRL after revoke: %v; want simon listed", err)
	}

	restore := func() {
		t.Helper()
		if out, err := exec.Command(pgRestore, "--clean", "--if-exists", "--single-transaction", "-d", store, dump).CombinedOutput(); err != nil {
			t.Fatalf("pg_restore: %v\n%s", err, out)
		}
		if got := statusOf(t, dir, "simon"); got != "valid" {
			t.Fatalf("simon after the restore: %s; want valid (the backup predates the revocation)", got)
		}
	}
	for _, tt := range []struct {
		name     string
		dropCopy bool // remove the published copy from the CA directory
		args     []string
	}{
		{"the published copy in the CA directory", false, nil},
		{"a CRL copy given with --crl", true, []string{"--crl", proxyCopy}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			restore()
			if tt.dropCopy {
				os.Remove(filepath.Join(dir, "crl.der"))
				os.Remove(filepath.Join(dir, "crl.pem"))
			}
			out, stderr, code := minica(t, dir, append([]string{"check"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("check: exit %d\n%s%s", code, out, stderr)
			}
			if !strings.Contains(out, "repaired: restored the revocation of simon (serial "+simon+", keyCompromise") {
				t.Errorf("check:\n%s\nwant simon's revocation restored", out)
			}
			if got := statusOf(t, dir, "simon"); got != "revoked" {
				t.Errorf("simon after check: %s; want revoked", got)
			}
			mustMinica(t, dir, "crl")
			crl, err := revoke.ParseCRL(readTestFile(t, filepath.Join(dir, "crl.der")), caCert(t, dir))
			if err != nil || !listed(crl, simon) {
				t.Fatalf("the CRL after check: %v; want simon listed", err)
			}
			if e, _ := crl.Lookup(bigOf(simonDecimal(t, simon))); e.Reason != revoke.KeyCompromise {
				t.Errorf("simon's CRL entry reason = %v; want keyCompromise", e.Reason)
			}
			if crl.Number().Cmp(before.Number()) <= 0 {
				t.Errorf("CRL number %s after the restore; want above %s, published before it", crl.Number(), before.Number())
			}
			if out := mustMinica(t, dir, "check"); !strings.Contains(out, " 0 problems") {
				t.Errorf("check again:\n%s", out)
			}
		})
	}
}

// statusOf returns the status `minica list --json` gives name's record.
func statusOf(t *testing.T, dir, name string) string {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(mustMinica(t, dir, "list", "--json")), "\n") {
		var r struct{ Name, Status string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Name == name {
			return r.Status
		}
	}
	return "absent"
}

func simonDecimal(t *testing.T, hexSerial string) string {
	n, ok := bigOf("0").SetString(hexSerial, 16)
	if !ok {
		t.Fatalf("serial %q", hexSerial)
	}
	return n.String()
}

// pgTool finds a PostgreSQL client program beside initdb, else on PATH.
func pgTool(t *testing.T, name string) string {
	t.Helper()
	bin, err := pgtest.Binaries()
	if err != nil {
		t.Skip(err)
	}
	if p := filepath.Join(bin, name); fileExists(p) {
		return p
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(dirs) > 0 {
		return dirs[len(dirs)-1]
	}
	return needTool(t, name, "postgresql-client")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// A serve replica whose store is restored from a backup taken before a
// revocation keeps serving the revocation: the signer re-applies what its
// served CRL lists to the store before it publishes again, and every CRL
// after lists it.
func TestServeRestoredBackupPG(t *testing.T) {
	t.Parallel()
	pgDump, pgRestore := pgTool(t, "pg_dump"), pgTool(t, "pg_restore")
	dir, store := newPGCADir(t, "4s")
	mustMinica(t, dir, "issue", "client", "simon")
	simon := serialOf(t, dir, "simon")
	dump := filepath.Join(t.TempDir(), "backup.dump")
	if out, err := exec.Command(pgDump, "-Fc", "-f", dump, store).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	p := startServe(t, replicaDir(t, dir))
	mustMinica(t, dir, "revoke", "simon")
	eventually(t, "simon on the served CRL", func() string {
		if crl, _ := p.servedCRL(t, dir); !listed(crl, simon) {
			return "not listed"
		}
		return ""
	})
	if out, err := exec.Command(pgRestore, "--clean", "--if-exists", "--single-transaction", "-d", store, dump).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	eventually(t, "the replica reconciling the store", func() string {
		if !strings.Contains(p.stderr.String(), "store-reconciled") {
			return "not reconciled"
		}
		return ""
	})
	if got := statusOf(t, dir, "simon"); got != "revoked" {
		t.Errorf("simon in the store after the replica reconciled: %s; want revoked\nserve: %s", got, p.stderr)
	}
	first, _ := p.servedCRL(t, dir)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		crl, _ := p.servedCRL(t, dir)
		if !listed(crl, simon) {
			t.Fatalf("CRL %s, served after the restore, does not list simon", crl.Number())
		}
		if crl.Number().Cmp(first.Number()) > 0 {
			return // a CRL signed from the reconciled store
		}
	}
	t.Errorf("no new CRL within 10s of the restore (lifetime 4s)\nserve: %s", p.stderr)
}
