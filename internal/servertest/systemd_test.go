//go:build interop

package servertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestSystemdUnits checks the units of `minica config systemd`,
// `systemd-proxy`, `systemd-serve` and `crl-fetch` with systemd-analyze
// verify, which parses them as systemd would and checks that the programs
// they run exist.
func TestSystemdUnits(t *testing.T) {
	analyze := need(t, "systemd-analyze", "systemd")
	p := newPKI(t)
	outputs := map[string][]string{
		"systemd": {"config", "systemd", "--server", "nginx", "--minica", minicaBin},
		"systemd-proxy": {"config", "systemd-proxy", "--server-cert", "web", "--upstream", "http://127.0.0.1:8080",
			"--listen", "127.0.0.1:8443", "--minica", minicaBin},
		"systemd-serve": {"config", "systemd-serve", "--listen", ":80", "--listen-tls", "127.0.0.1:8443", "--server-cert", "web",
			"--metrics-listen", "127.0.0.1:9100", "--minica", minicaBin},
		"systemd-serve no-sign": {"config", "systemd-serve", "--no-sign", "--minica", minicaBin},
	}
	for _, server := range []string{"nginx", "apache", "haproxy"} {
		outputs["crl-fetch "+server] = []string{"config", "crl-fetch", "--server", server, "--url", "http://127.0.0.1:8080/crl.der", "--minica", minicaBin}
	}
	outputs["crl-fetch https"] = []string{"config", "crl-fetch", "--server", "nginx", "--url", "https://pki.example.com/crl.pem",
		"--crl-ca", "/etc/ssl/pki.pem", "--host-dir", "/srv/tls files", "--reload", "kill -HUP $(cat /run/nginx.pid) # 100%", "--every", "5m",
		"--minica", minicaBin}
	header := regexp.MustCompile(`(?m)^### /etc/systemd/system/(\S+)\n`)
	for name, args := range outputs {
		t.Run(name, func(t *testing.T) {
			out := minica(t, p.dir, args...)
			dir := t.TempDir()
			idx := header.FindAllStringSubmatchIndex(out, -1)
			if len(idx) == 0 {
				t.Fatalf("no unit in the output:\n%s", out)
			}
			var files []string
			for i, m := range idx {
				end := len(out)
				if i+1 < len(idx) {
					end = idx[i+1][0]
				}
				file := filepath.Join(dir, out[m[2]:m[3]])
				if err := os.WriteFile(file, []byte(out[m[1]:end]), 0o644); err != nil {
					t.Fatal(err)
				}
				files = append(files, file)
			}
			if got, err := exec.Command(analyze, append([]string{"verify"}, files...)...).CombinedOutput(); err != nil || len(got) != 0 {
				t.Fatalf("systemd-analyze verify: %v\n%s", err, got)
			}
		})
	}
}
