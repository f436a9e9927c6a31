//go:build interop

package tutorialtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestQuickstart runs the README's first command, bash scripts/quickstart.sh,
// as written, and checks that it shows the whole job and leaves no process
// running.
func TestQuickstart(t *testing.T) {
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "scripts/quickstart.sh")
	cmd.Dir = filepath.Join("..", "..")
	// TMPDIR: the demo CA and the binary go where the test cleans up.
	cmd.Env = append(environWithout("MINICA_"), "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	outPath := filepath.Join(t.TempDir(), "output")
	outFile, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	cmd.Stdout, cmd.Stderr = outFile, outFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	runErr := cmd.Wait()
	left := syscall.Kill(-pgid, 0) == nil
	if left {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	out, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	if runErr != nil {
		t.Fatalf("bash scripts/quickstart.sh: %v\n%s", runErr, out)
	}
	if left {
		t.Errorf("processes of the quickstart were still running after it exited")
	}
	// A first build takes minutes: the quick start says so before it
	// starts, rather than looking stuck.
	if first, _, _ := strings.Cut(string(out), "\n"); !strings.HasPrefix(first, "quickstart: building minica") {
		t.Errorf("the quickstart's first line is %q; want it to say that minica is being built", first)
	}
	for _, want := range []string{
		"$ minica init ",
		"$ minica issue server app.example.com ",
		"$ minica issue client simon --email simon@example.com\n",
		"$ minica echo --listen 127.0.0.1:0 &\n",
		"$ minica proxy --server-cert app.example.com ",
		"\n  GET / HTTP/1.1\n",
		"\n  X-Ssl-Client-Cn: simon\n",
		"\n  X-Ssl-Client-Email: simon@example.com\n",
		"\n  X-Ssl-Client-Verify: SUCCESS\n",
		"$ minica revoke simon --reason keyCompromise\n",
		"reason=revoked cn=simon ",
		"\n  stopped\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the quickstart's output lacks %q", want)
		}
	}
	// The request after the revocation is refused: exactly one answer of
	// the app is shown, and two refusals.
	if n := strings.Count(string(out), "\n  GET / HTTP/1.1\n"); n != 1 {
		t.Errorf("the app answered %d times; want 1", n)
	}
	if n := strings.Count(string(out), "\n  refused: "); n != 2 {
		t.Errorf("%d refusals shown; want 2 (no certificate, revoked)", n)
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}
