//go:build interop

package browsertest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// minica runs a minica binary on one CA directory.
type minica struct {
	bin, dir string
}

// buildMinica compiles cmd/minica into a temporary directory and returns it
// bound to a new, empty CA directory.
func buildMinica(t *testing.T) *minica {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "minica")
	run(t, nil, "go", "build", "-o", bin, "minica/cmd/minica")
	return &minica{bin: bin, dir: filepath.Join(t.TempDir(), "ca")}
}

// bed is where every browser test starts: the tools checked, the
// screenshot directory, a work directory, minica built with a new CA, and
// the server certificate "localhost" for localhost and 127.0.0.1.
type bed struct {
	m            *minica
	work, shots  string
	caCN, caCert string // the CA's CN (see initCA) and certificate file
	server       issued
}

// newBed makes the bed of a test whose CA's CN starts with label.
func newBed(t *testing.T, label string) *bed {
	t.Helper()
	requireTools(t)
	b := &bed{shots: artifactDir(t), work: t.TempDir(), m: buildMinica(t)}
	b.caCN = b.m.initCA(t, b.work, label)
	b.caCert = filepath.Join(b.m.dir, "ca.crt")
	out := b.m.run(t, b.work, "issue", "server", "localhost", "--dns", "localhost", "--ip", "127.0.0.1", "--json")
	if err := json.Unmarshal([]byte(out), &b.server); err != nil {
		t.Fatalf("reading minica issue --json output %q: %v", out, err)
	}
	return b
}

// initCA makes m's CA with a CN of label and a random suffix, so that the
// browser's certificate picker and NSS never mix it up with an earlier
// run's CA, and returns that CN.
func (m *minica) initCA(t *testing.T, wd, label string) string {
	t.Helper()
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	cn := label + " " + hex.EncodeToString(suffix)
	m.run(t, wd, "init", "--cn", cn, "--no-password")
	return cn
}

// run runs minica with args in the working directory wd and returns its
// stdout; a failure fails the test.
func (m *minica) run(t *testing.T, wd string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, m.bin, args...)
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), "MINICA_DIR="+m.dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("minica %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// issued is the part of `minica issue --json` the test uses.
type issued struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// issueClient issues a client certificate for name with a .p12 of the given
// profile in wd, and returns the paths of the .p12 and its password file.
func (m *minica) issueClient(t *testing.T, wd, name, email, profile string) (p12, pwFile string, id issued) {
	t.Helper()
	p12, pwFile = filepath.Join(wd, name+".p12"), filepath.Join(wd, name+".pw")
	out := m.run(t, wd, "issue", "client", name, "--email", email, "--json",
		"--p12", "--p12-profile", profile, "--p12-out", p12, "--p12-password-out", pwFile)
	if err := json.Unmarshal([]byte(out), &id); err != nil {
		t.Fatalf("reading minica issue --json output %q: %v", out, err)
	}
	return p12, pwFile, id
}

// proxy is a running `minica proxy`.
type proxy struct {
	cmd  *exec.Cmd
	log  *lockedBuffer
	port int
}

// listening matches the proxy's start-up line, which names its port.
var listening = regexp.MustCompile(`minica proxy: listening on 127\.0\.0\.1:(\d+),`)

// startProxy runs `minica proxy` for the server certificate server on a
// free port of 127.0.0.1 in front of upstreamURL, with the flags extra, and
// waits (bounded) until it serves a request of the client id.
func (m *minica) startProxy(t *testing.T, server, upstreamURL string, id issued, extra ...string) *proxy {
	t.Helper()
	p := &proxy{log: &lockedBuffer{}}
	p.cmd = exec.Command(m.bin, append([]string{"proxy", "--server-cert", server,
		"--listen", "127.0.0.1:0", "--upstream", upstreamURL}, extra...)...)
	p.cmd.Env = append(os.Environ(), "MINICA_DIR="+m.dir)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting minica proxy: %v", err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
			t.Errorf("minica proxy did not stop within 10s of SIGTERM; log:\n%s", p.log)
		}
	})
	err := waitFor(15*time.Second, func() error {
		match := listening.FindStringSubmatch(p.log.String())
		if match == nil {
			return errors.New("no start-up line")
		}
		p.port, _ = strconv.Atoi(match[1])
		return get(m.dir, p.port, id)
	})
	if err != nil {
		t.Fatalf("minica proxy did not serve within 15s: %v; log:\n%s", err, p.log)
	}
	return p
}

// echoReady matches the start-up line of minica echo, which names its URL.
var echoReady = regexp.MustCompile(`minica echo: listening on (http://127\.0\.0\.1:\d+)`)

// startEchoProxy runs minica echo and in front of it `minica proxy` with
// the server certificate localhost and the flags extra, serving the client
// id, and returns the proxy and its origin.
func (m *minica) startEchoProxy(t *testing.T, id issued, extra ...string) (*proxy, string) {
	t.Helper()
	_, echo := m.startMinica(t, echoReady, "echo", "--listen", "127.0.0.1:0")
	px := m.startProxy(t, "localhost", echo[1], id, extra...)
	return px, fmt.Sprintf("https://127.0.0.1:%d", px.port)
}

// reloadUntilRefused sends SIGHUP to the proxy and waits (bounded) until it
// refuses the client id.
func (p *proxy) reloadUntilRefused(t *testing.T, caDir string, id issued) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatalf("sending SIGHUP to minica proxy: %v", err)
	}
	err := waitFor(15*time.Second, func() error {
		if get(caDir, p.port, id) == nil {
			return errors.New("the proxy still lets the revoked client in")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v 15s after SIGHUP; log:\n%s", err, p.log)
	}
}

// get makes one request to the proxy with the client certificate of id, in
// Go, and returns an error unless the upstream's page comes back.
func get(caDir string, port int, id issued) error {
	cert, err := tls.LoadX509KeyPair(id.Cert, id.Key)
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(filepath.Join(caDir, "ca.crt"))
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	client := &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}},
			DisableKeepAlives: true,
		},
	}
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/", port))
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// waitFor calls check every 100ms until it returns nil or timeout passes,
// and returns the last error.
func waitFor(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
