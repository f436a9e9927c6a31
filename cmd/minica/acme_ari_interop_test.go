//go:build interop

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// An ACME client that reads renewal information (RFC 9773) renews on its
// own when the operator revokes its certificate, or asks for renewal with
// `minica acme renew-now`, and not before. The client is lego v4.34 as a
// library (testdata/ariclient, a module of its own, so that minica's
// go.mod does not gain lego): Debian's lego and certbot do not read
// renewal information. It checks every 200ms instead of the hour serve's
// Retry-After asks for.
func TestACMERenewalInformation(t *testing.T) {
	t.Parallel()
	openssl := needTool(t, "openssl", "openssl")
	client := buildARIClient(t)
	const name = "web1.svc.example.com"
	for _, c := range []struct {
		name       string
		nudge      []string // the minica command that asks for renewal
		wantBefore string   // the first certificate's status after it
	}{
		{"revoke", []string{"revoke", name, "--reason", "keyCompromise"}, "revoked"},
		{"renew-now", []string{"acme", "renew-now", name}, "valid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newACMESetup(t)
			b := s.binding(t, "ari-fleet", "--dns-suffix", "svc.example.com")
			certFile := filepath.Join(t.TempDir(), "cert.pem")
			p := startARIClient(t, client, "-server", s.directory, "-domain", name, "-out", certFile,
				"-http-port", strconv.Itoa(s.httpPort), "-interval", "200ms", "-checks", "150", "-deadline", "30s")
			p.env("LEGO_CA_CERTIFICATES="+s.caFile, "ARICLIENT_EAB_KID="+b.KeyID, "ARICLIENT_EAB_HMAC="+b.HMACKey)
			p.start(t)

			p.waitLine(t, s, "obtained ", 30*time.Second)
			first := s.checkIssued(t, openssl, name, certFile, "")
			// The default window is the last third of a 7-day life: the
			// client waits, and keeps its certificate.
			line := p.waitLine(t, s, "check 3: ", 10*time.Second)
			if !strings.HasSuffix(line, " retry-after 1h0m0s: wait") {
				t.Errorf("the third check: %q; want serve's Retry-After of an hour, and a wait", line)
			}
			if got := s.checkIssued(t, openssl, name, certFile, ""); got != first {
				t.Fatalf("before any request to renew, the client replaced %s by %s", first, got)
			}

			nudged := time.Now()
			mustMinica(t, s.dir, c.nudge...)
			line = p.waitLine(t, s, "renewed ", 20*time.Second)
			t.Logf("%s: the client %s, %s later", strings.Join(c.nudge, " "), line, time.Since(nudged).Round(time.Millisecond))
			p.wait(t, s)
			second := s.checkIssued(t, openssl, name, certFile, "")
			if second == first {
				t.Fatalf("the client said %q but kept serial %s", line, first)
			}
			if r := s.record(t, first); r.Status != c.wantBefore {
				t.Errorf("after %s: the first certificate, %s, is %s; want %s", c.nudge[0], first, r.Status, c.wantBefore)
			}
			status := map[string]string{}
			for _, r := range s.listed(t, name) {
				status[r.Serial] = r.Status
			}
			if len(status) != 2 || status[first] != c.wantBefore || status[second] != "valid" {
				t.Errorf("list --json of %s: %v; want %s %s and %s valid", name, status, first, c.wantBefore, second)
			}
		})
	}
}

// buildARIClient builds testdata/ariclient into a temporary directory.
// On an empty module cache go fetches lego and its dependencies (85 MB)
// from the module proxy first: with them, and the standard library
// compiled, the build takes half a minute; then a second.
func buildARIClient(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ariclient")
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join("testdata", "ariclient")
	// The module's go.sum is complete, so go (read-only on go.mod) needs
	// no -mod=mod. GOWORK=off: no workspace file of a parent directory
	// may pull minica in; -buildvcs=false: nothing to stamp.
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building testdata/ariclient: %v\n%s", err, out)
	}
	t.Logf("built testdata/ariclient in %s", time.Since(start).Round(time.Millisecond))
	return bin
}

// ariProc is a running ariclient, its standard output read line by line.
type ariProc struct {
	cmd    *exec.Cmd
	lines  chan string
	stdout *syncBuffer
	stderr *syncBuffer
	done   chan error
}

func startARIClient(t *testing.T, bin string, args ...string) *ariProc {
	t.Helper()
	p := &ariProc{cmd: exec.Command(bin, args...), lines: make(chan string, 1000), stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	p.cmd.Env = os.Environ()
	p.cmd.Stderr = p.stderr
	return p
}

func (p *ariProc) env(kv ...string) { p.cmd.Env = append(p.cmd.Env, kv...) }

func (p *ariProc) start(t *testing.T) {
	t.Helper()
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.done = make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.stdout.Write([]byte(sc.Text() + "\n"))
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
}

// waitLine returns the first line to come that starts with prefix, and
// fails the test when the client exits or timeout passes first.
func (p *ariProc) waitLine(t *testing.T, s *acmeSetup, prefix string, timeout time.Duration) string {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("ariclient exited before a line %q...\nstdout:\n%s\nstderr:\n%s\nserve:\n%s", prefix, p.stdout, p.stderr, s.serve.stderr)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-timer.C:
			t.Fatalf("no line %q... from ariclient after %s\nstdout:\n%s\nstderr:\n%s\nserve:\n%s", prefix, timeout, p.stdout, p.stderr, s.serve.stderr)
		}
	}
}

// wait waits (5 s at most) for the client to exit 0.
func (p *ariProc) wait(t *testing.T, s *acmeSetup) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-p.lines:
			if ok {
				continue
			}
			err := <-p.done
			p.done <- err // for the cleanup
			if err != nil {
				t.Fatalf("ariclient: %v\nstdout:\n%s\nstderr:\n%s\nserve:\n%s", err, p.stdout, p.stderr, s.serve.stderr)
			}
			return
		case <-timeout:
			t.Fatalf("ariclient still running 5s after it renewed\nstdout:\n%s", p.stdout)
		}
	}
}
