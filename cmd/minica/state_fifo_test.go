//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO planted in the place of a state file (crl.der, crl.pem, a record,
// the revocation log) made check, crl status, verify, list, report, crl and
// proxy wait on it for ever. Each now ends, and says what is wrong and
// where, or, for check, puts a good file back.
func TestStateFileFIFO(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	mustMinica(t, f.dir, "revoke", "alice")
	record := filepath.Base(f.file(t, "bob", ".crt"))
	record = filepath.Join("db", record[:2], strings.TrimSuffix(record, ".crt")+".json")
	if _, err := os.Stat(filepath.Join(f.dir, record)); err != nil {
		t.Fatalf("bob's record: %v", err)
	}
	proxy := []string{"proxy", "--listen", "127.0.0.1:0", "--upstream", f.upstream.URL, "--server-cert", "app"}
	const refused = "not a regular file (a FIFO)"
	tests := []struct {
		file     string
		args     []string
		wantCode int
		want     string // in stdout or stderr, after the path of file
	}{
		{"crl.der", []string{"crl", "status"}, 2, refused},
		{"crl.der", []string{"verify", "bob"}, 1, refused},
		{"crl.der", []string{"list"}, 0, refused},
		{"crl.der", []string{"report"}, 0, refused},
		{"crl.der", []string{"crl"}, 1, refused},
		{"crl.der", proxy, 1, refused},
		{"crl.der", []string{"check"}, 0, ""}, // repaired from crl.pem
		{"crl.pem", []string{"check"}, 0, ""}, // repaired from crl.der
		{record, []string{"check"}, 1, refused},
		{record, []string{"verify", "bob"}, 1, refused},
		{record, []string{"list"}, 1, refused},
		{record, []string{"report"}, 1, refused},
		{"db/revoked.log", []string{"check"}, 1, refused},
		{"db/revoked.log", []string{"crl", "status"}, 3, refused},
		{"db/revoked.log", []string{"list"}, 0, refused},
		{"db/revoked.log", []string{"report"}, 0, refused},
		{"db/revoked.log", []string{"crl"}, 1, refused},
	}
	for _, tt := range tests {
		t.Run(tt.file+" "+strings.Join(tt.args[:min(len(tt.args), 2)], " "), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ca")
			if out, err := exec.Command("cp", "-a", f.dir, dir).CombinedOutput(); err != nil {
				t.Fatalf("copying the CA: %v %s", err, out)
			}
			planted := filepath.Join(dir, tt.file)
			if err := os.Remove(planted); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(planted, 0o644); err != nil {
				t.Fatal(err)
			}
			stdout, stderr, code, hung := minicaBounded(t, dir, tt.args...)
			if hung {
				t.Fatalf("minica %s with %s a FIFO still waited after 30s\nstderr: %s", strings.Join(tt.args, " "), tt.file, stderr)
			}
			out := stdout + stderr
			if code != tt.wantCode || tt.want != "" && !strings.Contains(out, planted+`": `+tt.want) {
				t.Fatalf("exit %d, output %q; want exit %d and %q after the path %s", code, out, tt.wantCode, tt.want, planted)
			}
			if tt.want == "" {
				if info, err := os.Lstat(planted); err != nil || !info.Mode().IsRegular() {
					t.Fatalf("after %s, %s: %v, %v; want a regular file put back", tt.args[0], tt.file, info.Mode(), err)
				}
			}
		})
	}
}

// minicaBounded is minica, killed after 30 s: hung reports that it had to
// be, for a command that waits for ever.
func minicaBounded(t *testing.T, dir string, args ...string) (stdout, stderr string, code int, hung bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "minica", args...)
	cmd.Env = append(os.Environ(), "MINICA_DIR="+dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.String(), errb.String(), -1, true
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running minica %v: %v", args, err)
	}
	return out.String(), errb.String(), code, false
}
