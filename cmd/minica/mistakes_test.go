package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mistake is one thing a user gets wrong in their second hour with minica
// (issue 31), and the advice its message must give. To add one, add a row
// to TestSecondHourMistakes: most need only args, code and want.
type mistake struct {
	name string
	// args follow "minica --dir DIR"; argsf builds them instead when they
	// depend on the fixture (a file, a URL).
	args  []string
	argsf func(f *mistakesFixture) []string
	// dir is the CA directory of the row (default: the shared CA).
	dir func(t *testing.T, f *mistakesFixture) string
	// env is set for the row only.
	env map[string]string
	// now, when set, is the row's clock.
	now  func(f *mistakesFixture) time.Time
	code int
	// want are fragments stderr must hold: the fact, and the exact words
	// that say what to do; wantNot fragments it must not (a secret typed
	// as a flag value, a guess where none is near).
	want, wantNot []string
	// verdict marks a command whose status is its verdict (verify, crl
	// status): it prints a report, not a minica error.
	verdict bool
	// changes allows the row to change its CA directory; by default the
	// directory (or its absence) stays byte for byte the same.
	changes bool
}

// mistakesFixture is what the rows share: one CA created once, where bob
// and dave are clients, web2 a server and carol a revoked client, and a
// directory for other files. Rows must leave it unchanged, so that their
// order does not matter.
type mistakesFixture struct {
	dir, files string
	// crlBase is a local HTTP server that answers only /crl.der, with the
	// shared CA's CRL.
	crlBase string
	// encrypted is a CA whose key is encrypted with the password "right",
	// made on first use (encryptedCA).
	encrypted string
	// p12 is bob's bundle under the password in files/right-pw; busy an
	// address another listener holds; otherCRL the URL of another CA's
	// CRL; crlExpired a time just past the shared CA's CRL's nextUpdate.
	p12, busy, otherCRL string
	crlExpired          time.Time
}

// TestSecondHourMistakes walks the mistakes of issue 31, in process, and
// checks that each message names the real mistake and says what to do,
// with a non-zero status (but for a repeated revocation, which is
// harmless) and no change to the CA directory.
func TestSecondHourMistakes(t *testing.T) {
	f := newMistakesFixture(t)
	rows := []mistake{
		// Point 2's command-line mistakes.
		{name: "flag misspelt", args: []string{"issue", "client", "dave2", "--emial", "d@example.com"}, code: 2,
			want: []string{"flag provided but not defined: --emial (did you mean --email?)"}},
		{name: "flag misspelt with one dash", args: []string{"issue", "client", "dave2", "-emial", "d@example.com"}, code: 2,
			want: []string{"flag provided but not defined: -emial (did you mean --email?)"}},
		{name: "flag far from any", args: []string{"issue", "client", "dave2", "--colour", "red"}, code: 2,
			want: []string{"flag provided but not defined: --colour\n", "run 'minica issue client --help'"}, wantNot: []string{"did you mean"}},
		{name: "global flag misspelt after a command", args: []string{"list", "--lock-timout", "1s"}, code: 2,
			want: []string{"flag provided but not defined: --lock-timout (did you mean --lock-timeout?)"}},
		{name: "flag misspelt after a subcommand with its own flags", args: []string{"crl", "--colour", "red"}, code: 2,
			want: []string{"flag provided but not defined: --colour\n", "run 'minica crl --help'"}, wantNot: []string{"subcommand"}},
		{name: "bad value of a global flag", args: []string{"list", "--lock-timeout", "soon"}, code: 2,
			want: []string{`invalid value "soon" for flag --lock-timeout`}},
		{name: "subcommand misspelt before a flag", args: []string{"issue", "sever", "web3", "--dns", "web3.example.com"}, code: 2,
			want: []string{`minica issue has no subcommand "sever"`, "did you mean 'minica issue server'?"}, wantNot: []string{"-dns"}},
		{name: "command misspelt before a flag", args: []string{"isue", "client", "dave2", "--email", "d@example.com"}, code: 2,
			want: []string{`unknown command "isue"`, "did you mean 'minica issue'?"}},
		{name: "flag value forgotten at the end", args: []string{"issue", "server", "web3", "--dns"}, code: 2,
			want: []string{"--dns needs a value"}, wantNot: []string{"argument"}},
		{name: "flag value forgotten before another flag", args: []string{"issue", "server", "web3", "--dns", "--ip", "10.0.0.3"}, code: 2,
			want: []string{"--dns needs a value"}},
		{name: "revoke an unknown name", args: []string{"revoke", "bobby"}, code: 1,
			want: []string{`no certificate named "bobby"`, "did you mean bob?", "'minica list' shows the names"}},
		{name: "revoke a name far from any", args: []string{"revoke", "zebedee"}, code: 1,
			want: []string{"'minica list' shows the names"}, wantNot: []string{"did you mean"}},
		{name: "export p12 of an unknown name", argsf: func(f *mistakesFixture) []string {
			return []string{"export", "p12", "bobby", "--out", filepath.Join(f.files, "bobby.p12")}
		}, code: 1, want: []string{"did you mean bob?", "'minica list'"}},
		{name: "renew an unknown name", args: []string{"renew", "dav"}, code: 1, want: []string{"did you mean dave?", "'minica list'"}},
		{name: "show an unknown name", args: []string{"show", "wbe2"}, code: 1, want: []string{"did you mean web2?", "'minica list'"}},
		{name: "verify an unknown name", args: []string{"verify", "carl"}, code: 1, want: []string{"did you mean carol?", "'minica list'"}},
		{name: "init with a password as a flag value", dir: absentDir, args: []string{"init", "--cn", "X", "--password", "hunter2"}, code: 2,
			want:    []string{"secrets are never flag values", "use --password-file FILE or the MINICA_PASSWORD environment variable"},
			wantNot: []string{"hunter2"}},
		{name: "init with --password=", dir: absentDir, args: []string{"init", "--cn", "X", "--password=hunter2"}, code: 2,
			want: []string{"--password is not a flag", "--password-file FILE"}, wantNot: []string{"hunter2"}},
		{name: "openssl's -passout", args: []string{"issue", "client", "dave2", "-passout", "pass:hunter2"}, code: 2,
			want: []string{"-passout is not a flag", "secrets are never flag values", "--password-file FILE"}, wantNot: []string{"hunter2"}},
		{name: "export p12 with its password as a flag value", args: []string{"export", "p12", "bob", "--password", "hunter2"}, code: 2,
			want: []string{"secrets are never flag values", "--password-file FILE or the MINICA_P12_PASSWORD environment variable"}, wantNot: []string{"hunter2"}},
		{name: "a token PIN as a flag value", args: []string{"crl", "--pin", "1234"}, code: 2,
			want: []string{"--pin is not a flag", "use --pin-file FILE or the MINICA_PIN environment variable"}, wantNot: []string{"1234"}},
		{name: "proxy --server-cert misspelt", args: []string{"proxy", "--server-cert", "wbe2", "--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:0"}, code: 1,
			want: []string{`server certificate "wbe2"`, "did you mean web2?"}},
		{name: "serve --server-cert misspelt", args: []string{"serve", "--listen", "127.0.0.1:0", "--listen-tls", "127.0.0.1:0", "--server-cert", "wbe2"}, code: 1,
			want: []string{`server certificate "wbe2"`, "did you mean web2?"}},
		// Point 2's mistakes of running things.
		{name: "a .p12 whose --password-file holds another password", argsf: func(f *mistakesFixture) []string {
			return []string{"convert", f.p12, "--password-file", writeFile(t, f.files, "wrong-pw", "wrong\n"), "--out", filepath.Join(f.files, "bob.pem")}
		}, code: 1, want: []string{"(--password-file) does not open", "must hold the password of"}, wantNot: []string{"pass --"}},
		{name: "a port in use", argsf: func(f *mistakesFixture) []string { return []string{"echo", "--listen", f.busy} }, code: 1,
			want: []string{"minica: hint: another process listens on 127.0.0.1:", ": stop it, or choose another port with --listen\n"}},
		{name: "an expired CRL in verify", args: []string{"verify", "bob"}, now: expiredCRL, code: 1, verdict: true,
			want: []string{"the CRL expired at ", "publish a fresh one with 'minica crl', or run 'minica serve', which re-signs it before it lapses"}},
		{name: "an expired CRL in crl status", args: []string{"crl", "status"}, now: expiredCRL, code: crlExpired, verdict: true,
			want: []string{"the CRL expired at ", "publish a fresh one with 'minica crl', or run 'minica serve'"}},
		{name: "a --crl URL of another CA", argsf: func(f *mistakesFixture) []string {
			return []string{"proxy", "--server-cert", "web2", "--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:0", "--crl", f.otherCRL}
		}, code: 1, want: []string{`is signed by "CN=Other", not by this CA ("CN=Second Hour CA"): check --crl URL or --ca`}, wantNot: []string{"minica crl'"}},
		{name: "config --server-cert misspelt", args: []string{"config", "nginx", "--server-cert", "wbe2", "--upstream", "http://127.0.0.1:8080"}, code: 1,
			want: []string{`no certificate named "wbe2"`, "did you mean web2? If not, issue one with 'minica issue server wbe2 --dns HOST'"}},

		// The mistakes that already had good advice, kept so.
		{name: "wrong CA password", dir: encryptedCA, argsf: func(f *mistakesFixture) []string {
			return []string{"issue", "client", "x", "--password-file", writeFile(t, f.files, "wrong-pw", "wrong\n")}
		}, code: 1, want: []string{"wrong password", "check --password-file or MINICA_PASSWORD"}},
		{name: "command misspelt", args: []string{"isue"}, code: 2, want: []string{`unknown command "isue"`, "did you mean 'minica issue'?"}},
		{name: "bad --reason", args: []string{"revoke", "bob", "--reason", "stolen"}, code: 2,
			want: []string{`unknown revocation reason "stolen"`, "(valid: unspecified, keyCompromise"}},
		{name: "revoking twice", args: []string{"revoke", "carol"}, code: 0, want: []string{"carol (serial ", "was already revoked at"}},
		{name: "a second certificate for a name", args: []string{"issue", "client", "bob"}, code: 1,
			want: []string{`a certificate named "bob" already exists`, "revoke it first, pass --force to issue a second one, or choose another name"}},
		{name: "no CA in the directory", dir: absentDir, args: []string{"list"}, code: 1,
			want: []string{"no CA found in", "create one with 'minica init --cn NAME', or point --dir / MINICA_DIR at an existing CA"}},
		{name: "init over a CA", args: []string{"init", "--cn", "Again", "--no-password"}, code: 1,
			want: []string{"a CA already exists in", "choose another --dir; minica never overwrites a CA"}},
		{name: "--validity 1y2", args: []string{"issue", "client", "dave2", "--validity", "1y2"}, code: 2,
			want: []string{`invalid duration "1y2"`, "such as 90d, 10y, 36h or 30m"}},
		{name: "mistyped --crl URL", argsf: func(f *mistakesFixture) []string {
			return []string{"proxy", "--server-cert", "web2", "--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:0", "--crl", f.crlBase + "/crl.dre"}
		}, code: 1, want: []string{"check that the --crl URL answers with the CA's CRL", "--crl-cache FILE"}},
		{name: "enroll in a script", args: []string{"enroll", "erin", "--email", "erin@example.com"}, code: 2,
			want: []string{"the link is a secret", "pass --json to hand the link to a script"}},
		{name: "a bootstrap token for weeks", args: []string{"token", "web2", "--expires", "40d"}, code: 2,
			want: []string{"invalid enrollment lifetime 40d: want more than 0 and at most 30d", "pass --expires 30d or less (default 1h)"}},
		{name: "token in a script", args: []string{"token", "web3", "--dns", "web3.example.com"}, code: 2,
			want: []string{"the token is a secret", "pass --json to hand the token to a script"}},
		{name: "a token for a name that has a certificate", args: []string{"token", "web2", "--json"}, code: 1,
			want: []string{`a certificate named "web2" already exists`, "revoke it first, pass --force to issue a second one, or choose another name"}},
	}
	for _, m := range rows {
		t.Run(m.name, func(t *testing.T) { m.check(t, f) })
	}
}

// check runs the row and checks its status, message and directory.
func (m mistake) check(t *testing.T, f *mistakesFixture) {
	dir := f.dir
	if m.dir != nil {
		dir = m.dir(t, f)
	}
	args := m.args
	if m.argsf != nil {
		args = m.argsf(f)
	}
	for k, v := range m.env {
		t.Setenv(k, v)
	}
	now := time.Now
	if m.now != nil {
		at := m.now(f)
		now = func() time.Time { return at }
	}
	before := dirState(t, dir)
	_, stderr, code := runInProcessAt(now, append([]string{"--dir", dir}, args...))
	line := "minica " + strings.Join(args, " ")
	if code != m.code {
		t.Errorf("%s: exit status %d; want %d\n%s", line, code, m.code, stderr)
	}
	if code != 0 && !m.verdict && !strings.Contains("\n"+stderr, "\nminica: error: ") {
		t.Errorf("%s: stderr holds no minica error:\n%s", line, stderr)
	}
	for _, w := range m.want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s: stderr lacks %q:\n%s", line, w, stderr)
		}
	}
	for _, w := range m.wantNot {
		if strings.Contains(stderr, w) {
			t.Errorf("%s: stderr holds %q:\n%s", line, w, stderr)
		}
	}
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
		t.Errorf("%s: stderr holds a stack trace:\n%s", line, stderr)
	}
	if !m.changes && dirState(t, dir) != before {
		t.Errorf("%s changed the CA directory", line)
	}
}

// runInProcess runs minica with args in this process, with no terminal
// and no input, and returns what it printed and its status.
func runInProcess(args []string) (stdout, stderr string, code int) {
	return runInProcessAt(time.Now, args)
}

// runInProcessAt is runInProcess with the clock now.
func runInProcessAt(now func() time.Time, args []string) (stdout, stderr string, code int) {
	e := newEnv()
	e.now = now
	var out, errb bytes.Buffer
	e.stdin, e.stdout, e.stderr = strings.NewReader(""), &out, &errb
	e.terminal = func() bool { return false }
	e.stdoutTerminal = func() bool { return false }
	e.progress = func() io.Writer { return nil }
	code = runInTest(context.Background(), append([]string{"minica"}, args...), e)
	return out.String(), errb.String(), code
}

// mustInProcess is runInProcess for a fixture step that must succeed.
func mustInProcess(t *testing.T, args ...string) {
	t.Helper()
	if _, stderr, code := runInProcess(args); code != 0 {
		t.Fatalf("minica %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
}

func newMistakesFixture(t *testing.T) *mistakesFixture {
	t.Helper()
	f := &mistakesFixture{dir: filepath.Join(t.TempDir(), "ca"), files: t.TempDir()}
	for _, args := range [][]string{
		{"init", "--cn", "Second Hour CA", "--no-password"},
		{"issue", "client", "bob", "--email", "bob@example.com"},
		{"issue", "client", "dave", "--email", "dave@example.com"},
		{"issue", "client", "carol", "--email", "carol@example.com"},
		{"revoke", "carol"},
		{"issue", "server", "web2"},
	} {
		mustInProcess(t, append([]string{"--dir", f.dir}, args...)...)
	}
	f.p12 = filepath.Join(f.files, "bob.p12")
	mustInProcess(t, "--dir", f.dir, "export", "p12", "bob", "--password-file", writeFile(t, f.files, "right-pw", "right\n"), "--out", f.p12)
	crl := readFile(t, filepath.Join(f.dir, "crl.der"))
	parsed, err := x509.ParseRevocationList(crl)
	if err != nil {
		t.Fatal(err)
	}
	f.crlExpired = parsed.NextUpdate.Add(time.Hour)
	mux := http.NewServeMux()
	mux.HandleFunc("/crl.der", func(w http.ResponseWriter, r *http.Request) { w.Write(crl) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f.crlBase = srv.URL
	other := filepath.Join(f.files, "other")
	mustInProcess(t, "--dir", other, "init", "--cn", "Other", "--no-password")
	otherSrv := httptest.NewServer(serveBytes(readFile(t, filepath.Join(other, "crl.der"))))
	t.Cleanup(otherSrv.Close)
	f.otherCRL = otherSrv.URL + "/crl.der"
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	f.busy = busy.Addr().String()
	return f
}

// expiredCRL is a row's clock: an hour past the shared CA's CRL's
// nextUpdate.
func expiredCRL(f *mistakesFixture) time.Time { return f.crlExpired }

// absentDir is a row's dir where there is no CA: a path that does not
// exist (and must not after the row).
func absentDir(t *testing.T, f *mistakesFixture) string {
	return filepath.Join(t.TempDir(), "no-ca")
}

// encryptedCA is a row's dir: f.encrypted, a CA whose key password is
// "right", made the first time a row asks. Its key is encrypted by
// openssl with 1000 PBKDF2 iterations rather than by minica init with
// 600,000: a wrong password is then found in a millisecond, not seconds.
func encryptedCA(t *testing.T, f *mistakesFixture) string {
	if f.encrypted == "" {
		dir := filepath.Join(f.files, "encrypted")
		mustInProcess(t, "--dir", dir, "init", "--cn", "Encrypted", "--no-password")
		key := filepath.Join(dir, "ca.key")
		out, err := exec.Command("openssl", "pkcs8", "-topk8", "-in", key, "-v2", "aes-256-cbc", "-v2prf", "hmacWithSHA256",
			"-iter", "1000", "-passout", "file:"+writeFile(t, f.files, "right-pw", "right\n")).Output()
		if err != nil {
			t.Fatalf("openssl pkcs8 (Debian package openssl): %v", err)
		}
		if err := os.Remove(key); err != nil {
			t.Fatal(err)
		}
		writeBytes(t, dir, "ca.key", out)
		f.encrypted = dir
	}
	return f.encrypted
}

// dirState is dirHash, or "absent" for a directory that does not exist.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return "absent"
	}
	return dirHash(t, dir)
}

// TestCheckArgsLeavesGoodLinesAlone: the whole-line check finds no mistake
// in command lines that urfave/cli takes, such as values that begin with a
// dash or are named like a flag.
func TestCheckArgsLeavesGoodLinesAlone(t *testing.T) {
	for _, line := range [][]string{
		{"issue", "client", "x", "--cn", "-dash-first"},
		{"issue", "client", "x", "--email=x@example.com", "--org", "Acme"},
		{"--dir", "d", "issue", "client", "x", "--force"},
		{"issue", "server", "web", "--dns", "web", "--", "--not-a-flag"},
		{"config", "systemd-serve", "--minica", "/usr/local/bin/minica", "--user", "minica"},
		{"config", "lighttpd", "--listen", "443"},
		{"revoke", "--", "-x"},
		{"help", "issue", "client"},
		{"issue", "client", "simon", "--help"},
		{"list", "-h"},
	} {
		if err := checkArgs(newApp(newEnv()), append([]string{"minica"}, line...)); err != nil {
			t.Errorf("minica %s: %v", strings.Join(line, " "), err)
		}
	}
}
