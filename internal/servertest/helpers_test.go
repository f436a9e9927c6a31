//go:build interop

package servertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"minica/internal/testport"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// waitLimit bounds every wait: a server starting, a reload taking effect.
const waitLimit = 15 * time.Second

var minicaBin string // built once by TestMain

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "minica-servertest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	minicaBin = filepath.Join(dir, "minica")
	// go test puts its own go first on PATH.
	if out, err := exec.Command("go", "build", "-o", minicaBin, "minica/cmd/minica").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building minica: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// need returns the path of a program, looking in $PATH and then in the sbin
// directories (not in a normal user's $PATH on Debian), or fails the test
// naming the Debian package that provides it.
func need(t *testing.T, program, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(program); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(dir, program)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("%s is required: install the Debian package %s", program, pkg)
	return ""
}

// minica runs the CLI with the CA in caDir and returns its stdout.
func minica(t *testing.T, caDir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(minicaBin, append([]string{"--dir", caDir}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("minica %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// client is a certificate and key to present with curl.
type client struct{ cert, key, serial string }

// pki is a CA with a server certificate, three clients of it (alice stays
// valid, bob gets revoked, carol has her email in the SAN only) and a client
// of another CA.
type pki struct {
	dir                    string
	caFile                 string
	alice, bob, carol, eve client
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	p := &pki{dir: filepath.Join(dir, "ca")}
	minica(t, p.dir, "init", "--cn", "Interop CA", "--no-password")
	minica(t, p.dir, "issue", "server", "web", "--dns", "localhost", "--ip", "127.0.0.1")
	p.alice = issueClient(t, p.dir, "alice", "alice@example.com")
	p.bob = issueClient(t, p.dir, "bob", "bob@example.com")
	p.carol = issueClient(t, p.dir, "carol", "carol@example.com", "--no-email-in-subject")
	other := filepath.Join(dir, "other")
	minica(t, other, "init", "--cn", "Interop CA", "--no-password") // same name, other key
	p.eve = issueClient(t, other, "alice", "alice@example.com")
	p.caFile = filepath.Join(p.dir, "chain.pem")
	return p
}

func issueClient(t *testing.T, caDir, name, email string, flags ...string) client {
	t.Helper()
	minica(t, caDir, append([]string{"issue", "client", name, "--email", email}, flags...)...)
	var rec struct {
		Serial   string `json:"serial"`
		CertFile string `json:"cert_file"`
		KeyFile  string `json:"key_file"`
	}
	if err := json.Unmarshal([]byte(minica(t, caDir, "show", name, "--json")), &rec); err != nil {
		t.Fatalf("minica show %s --json: %v", name, err)
	}
	return client{rec.CertFile, rec.KeyFile, rec.Serial}
}

// upstream is an HTTP server that answers every request with the request's
// headers as JSON, and counts the requests.
type upstream struct {
	url      string
	requests atomic.Int64
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{url: "http://" + ln.Addr().String()}
	srv := &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u.requests.Add(1)
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(r.Header)
		}),
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return u
}

// freePort returns a port of 127.0.0.1 that was free a moment ago, as
// text for an address or a configuration file.
func freePort(t *testing.T) string { return strconv.Itoa(testport.Free(t)) }

// server is a front end under test, running in the foreground.
type server struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  *bytes.Buffer
	mu   *sync.Mutex
}

// start runs the server and waits until it accepts on 127.0.0.1:port; it
// is killed when the test ends.
func start(t *testing.T, port string, name string, args ...string) *server {
	t.Helper()
	return startCmd(t, port, exec.Command(name, args...), waitLimit)
}

// startCmd is start for a command made ready by the caller (its user, its
// environment), waiting at most limit for it to accept.
func startCmd(t *testing.T, port string, cmd *exec.Cmd, limit time.Duration) *server {
	t.Helper()
	name := filepath.Base(cmd.Path)
	var mu sync.Mutex
	log := &bytes.Buffer{}
	// Its own process group, so that the workers die with it.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.WaitDelay = waitLimit
	w := &lockedWriter{mu: &mu, w: log}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	s := &server{cmd: cmd, done: make(chan struct{}), log: log, mu: &mu}
	go func() { cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-s.done:
		case <-time.After(waitLimit):
			t.Errorf("%s did not exit after SIGKILL", name)
		}
	})
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err == nil {
			c.Close()
			return s
		}
		select {
		case <-s.done:
			t.Fatalf("%s exited before accepting connections:\n%s", name, s.output())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not accept connections on port %s within %s:\n%s", name, port, limit, s.output())
		}
	}
}

func (s *server) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// response is what curl got: ok is false when the TLS handshake or the
// request failed; headers are the upstream's echo of what it received.
type response struct {
	ok      bool
	status  string
	headers http.Header
	detail  string
}

// get fetches https://127.0.0.1:port/ with curl, presenting c when it has a
// certificate, and sending the extra request headers.
func get(t *testing.T, curl, caFile, port string, c client, extra ...string) response {
	t.Helper()
	args := []string{"-sS", "--max-time", "10", "--cacert", caFile, "-o", "-", "-w", "\n%{http_code}"}
	if c.cert != "" {
		args = append(args, "--cert", c.cert, "--key", c.key)
	}
	for _, h := range extra {
		args = append(args, "-H", h)
	}
	args = append(args, "https://127.0.0.1:"+port+"/")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, curl, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := stdout.String()
	i := strings.LastIndex(out, "\n")
	r := response{status: out[i+1:], detail: strings.TrimSpace(stderr.String())}
	if err != nil {
		r.detail = fmt.Sprintf("curl: %v: %s", err, r.detail)
		return r
	}
	r.ok = true
	if r.status == "200" {
		if err := json.Unmarshal([]byte(out[:max(i, 0)]), &r.headers); err != nil {
			t.Fatalf("the upstream's answer is not its JSON echo: %v\n%s", err, out)
		}
	}
	return r
}

// refused reports whether the front end kept the request from the upstream:
// the handshake failed, or it answered with an error itself.
func refused(r response) bool { return !r.ok || r.status != "200" }

// shellJoin quotes every argument for sh.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
