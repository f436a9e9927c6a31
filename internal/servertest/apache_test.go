//go:build interop

package servertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// apacheModules are the modules the main configuration loads: the ones the
// generated file names, plus what any Apache needs.
var apacheModules = []string{"mpm_event", "authz_core", "socache_shmcb", "ssl", "headers", "proxy", "proxy_http"}

func TestApache(t *testing.T) { testFrontEnd(t, apacheFrontEnd(t)) }

// apacheFrontEnd runs apache2 in the foreground with the generated file
// included from a main configuration in the test's directory.
func apacheFrontEnd(t *testing.T) frontEnd {
	apache := need(t, "apache2", "apache2")
	const modDir = "/usr/lib/apache2/modules"
	return frontEnd{
		name:     "apache",
		sanEmail: true,
		start: func(t *testing.T, dir, generated, port string) *server {
			var b strings.Builder
			fmt.Fprintf(&b, "ServerRoot %s\nServerName localhost\nPidFile %[1]s/apache2.pid\n", dir)
			fmt.Fprintf(&b, "DefaultRuntimeDir %s\nErrorLog %[1]s/error.log\nLogLevel warn\n", dir)
			for _, m := range apacheModules {
				fmt.Fprintf(&b, "LoadModule %s_module %s/mod_%[1]s.so\n", m, modDir)
			}
			if os.Geteuid() == 0 {
				// Apache refuses to serve as root; Debian's apache2 package
				// brings the www-data user.
				b.WriteString("User www-data\nGroup www-data\n")
				if err := os.Chmod(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			b.WriteString("StartServers 1\nSSLSessionCache none\n")
			fmt.Fprintf(&b, "Include %s\n", generated)
			writeFile(t, filepath.Join(dir, "apache2.conf"), b.String())
			return start(t, port, apache, "-f", filepath.Join(dir, "apache2.conf"), "-DFOREGROUND")
		},
		reload: func(t *testing.T, dir string, s *server, _ string) {
			// What the generated comments prescribe: apachectl graceful,
			// here with the test's main configuration.
			cmd := exec.Command(apache, "-f", filepath.Join(dir, "apache2.conf"), "-k", "graceful")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("apache2 -k graceful: %v\n%s", err, out)
			}
		},
		reloadCommand: func(dir string, _ *server) string {
			return shellJoin([]string{apache, "-f", filepath.Join(dir, "apache2.conf"), "-k", "graceful"})
		},
	}
}
