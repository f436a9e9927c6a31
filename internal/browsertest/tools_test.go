//go:build interop

package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// tools maps each program the test runs to the Debian package providing it.
var tools = map[string]string{
	"chromium": "chromium",
	"pk12util": "libnss3-tools",
	"certutil": "libnss3-tools",
	"go":       "golang (or a Go toolchain on PATH)",
}

// requireTools fails the test, naming the Debian packages, when a program
// is missing, and when the test cannot write Chromium's policy directory.
func requireTools(t *testing.T) {
	t.Helper()
	for _, name := range []string{"chromium", "pk12util", "certutil", "go"} {
		if _, err := exec.LookPath(name); err != nil {
			t.Fatalf("%s not found: install the Debian package %s (apt-get install -y chromium libnss3-tools)", name, tools[name])
		}
	}
	if os.Geteuid() != 0 {
		t.Fatalf("the browser test must run as root: it writes a managed policy into %s", policyDir)
	}
}

// run executes a program with a bounded time and an optional environment
// addition, and returns its combined output; a failure fails the test.
func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	out, err := runErr(env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func runErr(env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// runStdout is runErr returning stdout only, within a minute (Chromium
// waits forever when no certificate is selected); the end of stderr
// (Chromium's noise) is added to the error when the program fails.
func runStdout(env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%w\n%s", err, lastLines(stderr.String(), 20))
	}
	return string(out), nil
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
