package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestExitCodes: every usage error (an unknown flag, command or
// subcommand, a wrong number of arguments, a flag value of the wrong kind)
// exits 2; every other failure exits 1.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ca")
	runMinica := func(args ...string) (int, string) { return runIn(dir, args...) }
	for _, args := range [][]string{{"init", "--cn", "Root", "--no-password"}, {"issue", "client", "alice"}} {
		if code, out := runMinica(args...); code != 0 {
			t.Fatalf("minica %v: exit %d\n%s", args, code, out)
		}
	}

	type row struct {
		args []string
		want int
	}
	var rows []row
	// Every command, with an unknown flag and with stray arguments.
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := append(append([]string(nil), path...), c.Name)
			if len(c.Subcommands) > 0 {
				walk(p, c.Subcommands)
				rows = append(rows, row{append(append([]string(nil), p...), "no-such-subcommand"), 2})
			}
			rows = append(rows, row{append(append([]string(nil), p...), "--no-such-flag"), 2})
			rows = append(rows, row{append(append([]string(nil), p...), strings.Fields(strings.Repeat("x ", 20))...), 2})
		}
	}
	walk(nil, newApp(newEnv()).Commands)
	rows = append(rows,
		// Unknown commands, missing arguments.
		row{[]string{"isue"}, 2},
		row{[]string{}, 2},
		row{[]string{"issue"}, 2},
		row{[]string{"issue", "client"}, 2},
		row{[]string{"revoke"}, 2},
		row{[]string{"show"}, 2},
		row{[]string{"export", "p12"}, 2},
		row{[]string{"sign"}, 2},
		row{[]string{"inspect"}, 2},
		row{[]string{"convert"}, 2},
		row{[]string{"completion"}, 2},
		row{[]string{"completion", "fish"}, 2},
		row{[]string{"config"}, 2},
		row{[]string{"config", "lighttpd"}, 2},
		row{[]string{"help", "nosuch"}, 2},
		// Values of the wrong kind.
		row{[]string{"--lock-timeout", "soon", "list"}, 2},
		row{[]string{"list", "--status", "bogus"}, 2},
		row{[]string{"list", "--profile", "bogus"}, 2},
		row{[]string{"list", "--expiring", "soon"}, 2},
		row{[]string{"list", "--expiring"}, 2},
		row{[]string{"issue", "client", "bob", "--validity", "forever"}, 2},
		row{[]string{"issue", "client", "bob", "--key-type", "dsa"}, 2},
		row{[]string{"issue", "server", "web", "--ip", "not-an-ip"}, 2},
		row{[]string{"revoke", "alice", "--reason", "lost"}, 2},
		row{[]string{"crl", "--next-update", "soon"}, 2},
		row{[]string{"crl", "status", "--warn", "soon"}, 2},
		row{[]string{"export", "p12", "alice", "--profile", "ancient"}, 2},
		row{[]string{"proxy", "--headers", "bogus"}, 2},
		row{[]string{"proxy", "--listen", "nowhere:port:x"}, 2},
		row{[]string{"init", "--cn", "X", "--key-type", "dsa", "--no-password"}, 2},
		row{[]string{"proxy", "--max-conns", "many"}, 2},
		row{[]string{"proxy", "--max-conns", "-5"}, 2},
		row{[]string{"proxy", "--max-header-bytes", "1.5"}, 2},
		row{[]string{"list", "--json=maybe"}, 2},
		row{[]string{"list", "--json", "extra"}, 2},
		row{[]string{"revoke", "alice", "nobody"}, 2},
		row{[]string{"sign-intermediate"}, 2},
		row{[]string{"sign-intermediate", "x.csr", "--permit-ip", "10.0.0.0"}, 2},
		row{[]string{"crl", "import-root"}, 2},
		row{[]string{"--dir", filepath.Join(dir, "i"), "init", "--intermediate", "--cn", "I", "--no-password"}, 2},
		row{[]string{"--dir", filepath.Join(dir, "i"), "init", "--root", "--intermediate", "--cn", "I", "--no-password"}, 2},
		row{[]string{"--dir", filepath.Join(dir, "i"), "init", "--cn", "I", "--path-len", "2", "--no-password"}, 2},
		row{[]string{"--dir", filepath.Join(dir, "i"), "init", "--intermediate", "--import", "x.crt"}, 2},
		// Failures that are not usage errors.
		row{[]string{"revoke", "nobody"}, 1},
		row{[]string{"show", "nobody"}, 1},
		row{[]string{"export", "p12", "nobody"}, 1},
		row{[]string{"issue", "client", "alice"}, 1},
		row{[]string{"init", "--cn", "Again", "--no-password"}, 1},
		row{[]string{"inspect", "no-such-file.pem"}, 1},
		row{[]string{"verify", "no-such-file.pem"}, 1},
		row{[]string{"convert", "no-such-file.pem"}, 1},
		row{[]string{"--dir", filepath.Join(dir, "missing"), "list"}, 1},
		row{[]string{"sign-intermediate", "no-such.csr"}, 1},
		row{[]string{"crl", "import-root", "no-such.crl"}, 1},
		row{[]string{"--dir", filepath.Join(dir, "i"), "init", "--intermediate", "--import", "x.crt", "--root-crl", "x.crl"}, 1},
	)
	for _, r := range rows {
		code, out := runMinica(r.args...)
		if code != r.want {
			t.Errorf("minica %s: exit %d; want %d\n%s", strings.Join(r.args, " "), code, r.want, out)
		}
	}
}

// runIn runs minica with --dir dir and args, without a terminal and with
// empty stdin, and returns its exit code and its stdout and stderr together.
func runIn(dir string, args ...string) (int, string) {
	e := newEnv()
	var out bytes.Buffer
	e.stdin, e.stdout, e.stderr = strings.NewReader(""), &out, &out
	e.terminal = func() bool { return false }
	return runInTest(context.Background(), append([]string{"minica", "--dir", dir}, args...), e), out.String()
}

// inProcess lets one test at a time run minica inside the test binary:
// urfave/cli's Run writes its package-level flags (cli.HelpFlag and the
// like), so two runs at once race. Runs in child processes need no turn.
var inProcess sync.Mutex

// runInTest is run, for a test that calls minica in the test binary
// itself, taking its turn (see inProcess).
func runInTest(ctx context.Context, args []string, e *env) int {
	inProcess.Lock()
	defer inProcess.Unlock()
	return run(ctx, args, e)
}
