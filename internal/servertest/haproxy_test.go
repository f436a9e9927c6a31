//go:build interop

package servertest

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHAProxy(t *testing.T) { testFrontEnd(t, haproxyFrontEnd(t)) }

// haproxyFrontEnd runs HAProxy in the foreground in master-worker mode, as
// Debian's unit does, with the generated file as a second -f.
func haproxyFrontEnd(t *testing.T) frontEnd {
	haproxy := need(t, "haproxy", "haproxy")
	return frontEnd{
		name: "haproxy",
		start: func(t *testing.T, dir, generated, port string) *server {
			// The runtime API socket, which the generated comments use to
			// swap in a new CRL, and the timeouts of any HAProxy.
			main := fmt.Sprintf(`global
    stats socket %s/admin.sock level admin

defaults
    timeout connect 5s
    timeout client 30s
    timeout server 30s
`, dir)
			writeFile(t, filepath.Join(dir, "haproxy.cfg"), main)
			return start(t, port, haproxy, "-W", "-db", "-f", filepath.Join(dir, "haproxy.cfg"), "-f", generated)
		},
		reload: func(t *testing.T, dir string, s *server, crlFile string) {
			// What the generated comments prescribe: set ssl crl-file with
			// the new CRL, then commit ssl crl-file.
			crl, err := os.ReadFile(crlFile)
			if err != nil {
				t.Fatal(err)
			}
			sock := filepath.Join(dir, "admin.sock")
			set := "set ssl crl-file " + crlFile + " <<\n" + strings.TrimRight(string(crl), "\n") + "\n\n"
			if out := runtimeAPI(t, sock, set); !strings.Contains(out, "transaction created") {
				t.Fatalf("set ssl crl-file: %q", out)
			}
			if out := runtimeAPI(t, sock, "commit ssl crl-file "+crlFile+"\n"); !strings.Contains(out, "Success") {
				t.Fatalf("commit ssl crl-file: %q", out)
			}
		},
		reloadCommand: func(_ string, s *server) string {
			// What systemctl reload haproxy does: SIGUSR2 to the master.
			return fmt.Sprintf("kill -USR2 %d", s.cmd.Process.Pid)
		},
	}
}

// runtimeAPI sends one command to HAProxy's runtime API and returns the
// answer.
func runtimeAPI(t *testing.T, sock, command string) string {
	t.Helper()
	c, err := net.DialTimeout("unix", sock, waitLimit)
	if err != nil {
		t.Fatalf("connecting to the runtime API: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLimit))
	if _, err := io.WriteString(c, command); err != nil {
		t.Fatalf("runtime API: %v", err)
	}
	out, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("runtime API: %v", err)
	}
	return string(out)
}
