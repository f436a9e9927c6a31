//go:build interop

package tutorialtest

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"minica/internal/testport"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tools maps each program the tutorial runs to its Debian package.
var tools = map[string]string{
	"bash":     "bash",
	"curl":     "curl",
	"certutil": "libnss3-tools",
	"pk12util": "libnss3-tools",
	"go":       "golang (or a Go toolchain on PATH)",
}

func TestTutorial(t *testing.T) {
	for name, pkg := range tools {
		if _, err := exec.LookPath(name); err != nil {
			t.Fatalf("%s not found: install the Debian package %s", name, pkg)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "tutorial.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := shellBlocks(string(doc))
	if err != nil {
		t.Fatalf("docs/tutorial.md: %v", err)
	}
	if len(blocks) == 0 {
		t.Fatal("docs/tutorial.md has no sh blocks")
	}

	bin := t.TempDir()
	build(t, "go", "build", "-o", filepath.Join(bin, "minica"), "minica/cmd/minica")

	// The application is the tutorial's own `minica echo`.
	appPort, proxyPort, pageProxyPort := testport.Free(t), testport.Free(t), testport.Free(t)
	script := "set -euo pipefail\n" + strings.Join(blocks, "")
	script = strings.NewReplacer("8080", fmt.Sprint(appPort), "8443", fmt.Sprint(proxyPort), "8444", fmt.Sprint(pageProxyPort)).Replace(script)

	work, home := t.TempDir(), t.TempDir()
	out, err := runScript(t, script, work, []string{
		"HOME=" + home,
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"MINICA_PASSWORD=tutorial CA password",
	})
	proxyLog, _ := os.ReadFile(filepath.Join(work, "proxy.log"))
	if err != nil {
		t.Fatalf("the tutorial's commands failed: %v\n--- output:\n%s\n--- proxy.log:\n%s", err, out, proxyLog)
	}
	defer func() {
		if t.Failed() {
			t.Logf("the tutorial's output:\n%s", out)
		}
	}()

	for _, want := range []string{
		"X-Ssl-Client-Cn: simon\n",
		"X-Ssl-Client-Email: simon@example.com\n",
		"X-Ssl-Client-Dn: emailAddress=simon@example.com,CN=simon\n",
		"X-Ssl-Client-Verify: SUCCESS\n",
		"refused: no client certificate\n",
		"refused: simon's certificate is revoked\n",
		"wrote simon-2.p12: key, certificate and 1 CA certificate",
		// The proxy in --refusal page mode says why, and where to go.
		"Your certificate has been revoked (revoked)\n",
		"https://intranet.example.com/certificates",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the tutorial's output lacks %q", want)
		}
	}
	// The application saw one request: the first curl's; neither the
	// request without a certificate nor the one after the revocation
	// reached it.
	appLog, _ := os.ReadFile(filepath.Join(work, "app.log"))
	if n := strings.Count(string(appLog), `minica echo: GET "/" from `); n != 1 {
		t.Errorf("app.log shows %d requests; want 1:\n%s", n, appLog)
	}
	for _, want := range []string{"reason=no-certificate", "reason=revoked cn=simon "} {
		if !strings.Contains(string(proxyLog), want) {
			t.Errorf("proxy.log lacks %q:\n%s", want, proxyLog)
		}
	}
	checkPolicy(t, filepath.Join(work, "acme-client-cert.json"), fmt.Sprintf("https://app.example.com:%d", proxyPort), filepath.Join(home, ".minica", "ca.crt"))
	for _, f := range []string{"simon.p12", "simon-compat.p12", "app.conf", "acme-ca.crt", "simon-2.p12", "simon-2.pass"} {
		if _, err := os.Stat(filepath.Join(work, f)); err != nil {
			t.Errorf("the tutorial did not leave %s: %v", f, err)
		}
	}
	keys, err := exec.Command("certutil", "-K", "-d", "sql:"+filepath.Join(home, ".pki", "nssdb")).CombinedOutput()
	if err != nil || !strings.Contains(string(keys), " simon") {
		t.Errorf("certutil -K after the tutorial: %v\n%s", err, keys)
	}
}

// checkPolicy checks the Chromium policy the tutorial wrote at path: valid
// JSON, one AutoSelectCertificateForUrls rule (a JSON string of its own)
// for the site at pattern and the CA whose certificate is at caPath, by
// that CA's CN, as Chromium matches it.
func checkPolicy(t *testing.T, path, pattern, caPath string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the tutorial did not write its browser policy: %v", err)
	}
	var policy map[string][]string
	if err := json.Unmarshal(data, &policy); err != nil {
		t.Fatalf("%s is not a Chromium policy (an object of string lists): %v\n%s", filepath.Base(path), err, data)
	}
	rules := policy["AutoSelectCertificateForUrls"]
	if len(policy) != 1 || len(rules) != 1 {
		t.Fatalf("%s holds %v; want one AutoSelectCertificateForUrls rule", filepath.Base(path), policy)
	}
	var rule struct {
		Pattern string `json:"pattern"`
		Filter  struct {
			Issuer struct {
				CN string `json:"CN"`
			} `json:"ISSUER"`
		} `json:"filter"`
	}
	dec := json.NewDecoder(strings.NewReader(rules[0]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rule); err != nil {
		t.Fatalf("the rule %s is not pattern and filter.ISSUER.CN: %v", rules[0], err)
	}
	pemData, err := os.ReadFile(caPath)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pemData)
	if block == nil {
		t.Fatalf("%s holds no PEM", caPath)
	}
	caCert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if rule.Pattern != pattern || rule.Filter.Issuer.CN != caCert.Subject.CommonName {
		t.Errorf("the rule selects %q by issuer CN %q; want %q and the CA's CN %q", rule.Pattern, rule.Filter.Issuer.CN, pattern, caCert.Subject.CommonName)
	}
}

// runScript runs script with bash in dir, in a process group of its own
// that is killed at the end (the tutorial leaves the proxy running), with
// a bound of two minutes. It returns stdout and stderr together.
func runScript(t *testing.T, script, dir string, env []string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(environWithout("MINICA_"), env...) // the tutorial uses ~/.minica
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A file, not a pipe, takes the output: the proxy left in the
	// background keeps it open after bash exits.
	outPath := filepath.Join(t.TempDir(), "output")
	outFile, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	cmd.Stdout, cmd.Stderr = outFile, outFile
	if err := cmd.Start(); err != nil {
		return "", err
	}
	pgid := cmd.Process.Pid
	// bash exits with the script; the proxy it started in the background
	// is still in the group: stop it, and wait for it to be gone.
	err = cmd.Wait()
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(-pgid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if syscall.Kill(-pgid, 0) == nil {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		t.Errorf("the tutorial's background processes did not stop within 10s of SIGTERM")
	}
	out, readErr := os.ReadFile(outPath)
	if readErr != nil {
		t.Fatal(readErr)
	}
	return string(out), err
}

func build(t *testing.T, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// environWithout returns the environment less the variables whose names
// start with prefix.
func environWithout(prefix string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			env = append(env, kv)
		}
	}
	return env
}
