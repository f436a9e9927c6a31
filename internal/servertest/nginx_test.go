//go:build interop

package servertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestNginx(t *testing.T) { testFrontEnd(t, nginxFrontEnd(t)) }

// nginxFrontEnd runs nginx in the foreground with the generated file
// included from a main configuration in the test's directory.
func nginxFrontEnd(t *testing.T) frontEnd {
	nginx := need(t, "nginx", "nginx")
	// args are the flags that point nginx at the test's directory.
	args := func(dir string) []string {
		return []string{"-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", filepath.Join(dir, "nginx.conf")}
	}
	return frontEnd{
		name: "nginx",
		start: func(t *testing.T, dir, generated, port string) *server {
			main := fmt.Sprintf(`daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log stderr notice;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[2]s;
}
`, dir, generated)
			writeFile(t, filepath.Join(dir, "nginx.conf"), main)
			return start(t, port, nginx, args(dir)...)
		},
		reload: func(t *testing.T, dir string, s *server, _ string) {
			// What the generated comments prescribe: nginx -s reload.
			if out, err := exec.Command(nginx, append(args(dir), "-s", "reload")...).CombinedOutput(); err != nil {
				t.Fatalf("nginx -s reload: %v\n%s", err, out)
			}
		},
		reloadCommand: func(dir string, _ *server) string {
			return shellJoin(append([]string{nginx}, append(args(dir), "-s", "reload")...))
		},
	}
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
