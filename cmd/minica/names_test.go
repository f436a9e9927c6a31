package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// minicaIn runs minica in the working directory wd with MINICA_DIR=dir.
func minicaIn(t *testing.T, wd, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("minica", args...)
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), "MINICA_DIR="+dir)
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

type nameStep struct {
	args     []string
	wantCode int
	want     string // in stdout or stderr
	wantFile string // created in the working directory
}

func runNameSteps(t *testing.T, wd, dir string, steps []nameStep) {
	t.Helper()
	for _, s := range steps {
		stdout, stderr, code := minicaIn(t, wd, dir, s.args...)
		line := "minica " + strings.Join(s.args, " ")
		if code != s.wantCode {
			t.Errorf("%s: exit status %d; want %d\nstdout: %s\nstderr: %s", line, code, s.wantCode, stdout, stderr)
			continue
		}
		if strings.Contains(stdout, "USAGE:") || strings.Contains(stderr, "USAGE:") {
			t.Errorf("%s printed help instead of acting on the name:\n%s", line, stdout)
		}
		if !strings.Contains(stdout+stderr, s.want) {
			t.Errorf("%s: output does not contain %q\nstdout: %s\nstderr: %s", line, s.want, stdout, stderr)
		}
		if s.wantFile != "" {
			if _, err := os.Stat(filepath.Join(wd, s.wantFile)); err != nil {
				t.Errorf("%s: %v", line, err)
			}
		}
	}
}

// TestNamesAreData gives every command that takes a NAME (or a file) the
// words urfave/cli would read as a help request or a command: they are the
// name of a certificate, which is issued, shown, verified, exported and
// revoked like any other.
func TestNamesAreData(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"help", "h", "version", "completion"} {
		t.Run(name, func(t *testing.T) {
			wd := t.TempDir()
			dir := filepath.Join(wd, "ca")
			mustMinica(t, dir, "init", "--cn", "Test Root", "--no-password")
			key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			writeBytes(t, wd, "req.csr", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER(t, key, name)}))
			writeFile(t, wd, "pw", "bundle password\n")
			runNameSteps(t, wd, dir, []nameStep{
				{args: []string{"sign", "req.csr"}, want: `issued client certificate "` + name + `"`},
				{args: []string{"show", name}, want: name},
				{args: []string{"show", "--json", "--", name}, want: `"name":"` + name + `"`},
				{args: []string{"verify", name}, want: "valid: CN=" + name},
				{args: []string{"export", "p12", name, "--key", "missing.key"}, wantCode: 1, want: "missing.key"},
				{args: []string{"revoke", name}, want: "revoked " + name},
				{args: []string{"verify", name}, wantCode: 1, want: "revoked"},
				{args: []string{"issue", "client", name}, want: `issued client certificate "` + name + `"`},
				{args: []string{"export", "p12", name, "--password-file", "pw"}, want: name + ".p12", wantFile: name + ".p12"},
				{args: []string{"revoke", "--reason", "superseded", "--", name}, want: "revoked " + name},
				{args: []string{"issue", "server", "--dns", "www.example.com", name}, want: `issued server certificate "` + name + `"`},
				{args: []string{"config", "nginx", "--server-cert", name, "--upstream", "127.0.0.1:8080"}, want: "ssl_certificate"},
				{args: []string{"selfsigned", name, "--dns", "self.example.com"}, want: name, wantFile: name + ".crt"},
				{args: []string{"inspect", name + ".crt"}, want: "self.example.com"},
			})
			// A file of that name, not a certificate name.
			os.Rename(filepath.Join(wd, name+".crt"), filepath.Join(wd, name))
			runNameSteps(t, wd, filepath.Join(wd, "other"), []nameStep{
				{args: []string{"inspect", name}, want: "self.example.com"},
				{args: []string{"convert", name, "--to", "der", "--out", "self.der"}, wantFile: "self.der"},
			})
		})
	}
}

// TestDashNamesAreData checks the rule for names that look like flags:
// after "--" everything is data, so a certificate file called "-h" or "--"
// is shown, exported and revoked, and "issue client -- -h" is refused as a
// bad name rather than answered with help. "-h" before any "--" still asks
// for help.
func TestDashNamesAreData(t *testing.T) {
	t.Parallel()
	wd := t.TempDir()
	dir := filepath.Join(wd, "ca")
	mustMinica(t, dir, "init", "--cn", "Test Root", "--no-password")
	writeFile(t, wd, "pw", "bundle password\n")
	for i, name := range []string{"-h", "--"} {
		t.Run(name, func(t *testing.T) {
			issued := fmt.Sprintf("c%d", i)
			mustMinica(t, dir, "issue", "client", issued)
			certs := serialCerts(filepath.Join(dir, "certs", issued, "*.crt"))
			if len(certs) != 1 {
				t.Fatalf("found %d certificates", len(certs))
			}
			data, err := os.ReadFile(certs[0])
			if err != nil {
				t.Fatal(err)
			}
			writeBytes(t, wd, name, data)
			runNameSteps(t, wd, dir, []nameStep{
				{args: []string{"issue", "client", "--", name}, wantCode: 2, want: `invalid name "` + name + `"`},
				{args: []string{"selfsigned", "--", name}, wantCode: 2, want: `invalid name "` + name + `"`},
				{args: []string{"show", "--", name}, want: "client"},
				{args: []string{"verify", "--", name}, want: "valid: CN=" + issued},
				{args: []string{"inspect", "--", name}, want: "CN="},
				{args: []string{"convert", "--to", "der", "--out", "c.der", "--force", "--", name}, wantFile: "c.der"},
				{args: []string{"export", "p12", "--password-file", "pw", "--out", "c.p12", "--force", "--", name}, wantFile: "c.p12"},
				{args: []string{"revoke", "--", name}, want: "revoked " + issued},
			})
		})
	}
	stdout, _, code := minicaIn(t, wd, dir, "revoke", "-h")
	if code != 0 || !strings.Contains(stdout, "USAGE:") {
		t.Errorf("minica revoke -h: exit %d, stdout %q; want help and status 0", code, stdout)
	}
}
