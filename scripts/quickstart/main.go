// Command quickstart shows minica's whole job in a few seconds, with the
// minica binary given as its argument (scripts/quickstart.sh builds it): it
// creates a CA in a fresh temporary directory, issues a server and a client
// certificate, runs `minica echo` (an app that answers with the headers it
// got) and `minica proxy` in front of it on 127.0.0.1, sends a request with
// the client certificate, revokes the client and shows the next request
// refused, then stops both. It prints each minica command it runs, and the
// curl command line that sends the same request by hand. It needs only Go:
// the requests use Go's HTTP client.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// serverName is the demo server's name; the client reaches it on 127.0.0.1.
const serverName = "app.example.com"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/quickstart MINICA-BINARY")
		os.Exit(2)
	}
	q := &quickstart{minica: os.Args[1], out: os.Stdout}
	err := q.run()
	q.stopAll()
	if err != nil {
		fmt.Fprintf(os.Stderr, "quickstart: error: %v\n", err)
		os.Exit(1)
	}
}

type quickstart struct {
	minica string
	out    io.Writer
	dir    string // the demo CA directory
	procs  []*process
}

func (q *quickstart) run() error {
	work, err := os.MkdirTemp("", "minica-quickstart-")
	if err != nil {
		return err
	}
	q.dir = filepath.Join(work, "demo-ca")
	q.say("# minica's main job, in a demo CA directory of its own (not ~/.minica):")
	q.say("$ export MINICA_DIR=%s", q.dir)
	steps := [][]string{
		{"version"},
		{"init", "--cn", "Demo Internal CA", "--org", "Demo", "--no-password"},
		{"issue", "server", serverName, "--dns", serverName, "--ip", "127.0.0.1"},
	}
	for _, args := range steps {
		if _, err := q.minicaRun(args...); err != nil {
			return err
		}
	}
	issued, err := q.minicaRun("issue", "client", "simon", "--email", "simon@example.com")
	if err != nil {
		return err
	}
	certFile, keyFile := field(issued, "cert"), field(issued, "key")
	if certFile == "" || keyFile == "" {
		return fmt.Errorf("no cert and key paths in the output of minica issue client")
	}

	q.say("\n# An app to put behind the proxy: minica echo answers with the request line and headers it got.")
	echo, err := q.start("minica echo: listening on ", "echo", "--listen", "127.0.0.1:0")
	if err != nil {
		return err
	}
	q.say("\n# The mTLS proxy in front of it: only valid, unrevoked client certificates of the CA get through.")
	prox, err := q.start("minica proxy: listening on ", "proxy", "--server-cert", serverName, "--listen", "127.0.0.1:0",
		"--upstream", echo.addr, "--reload-interval", "1s")
	if err != nil {
		return err
	}
	proxyAddr, _, _ := strings.Cut(prox.addr, ",")
	_, port, err := net.SplitHostPort(proxyAddr)
	if err != nil {
		return fmt.Errorf("the proxy's listening line: %v", err)
	}

	q.say("\n# A request with simon's certificate; the app's answer shows the identity headers the proxy set:")
	short := strings.NewReplacer(q.dir, "$MINICA_DIR").Replace
	q.say("$ curl --cacert $MINICA_DIR/ca.crt --cert %s --key %s \\\n    --resolve %s:%s:127.0.0.1 https://%s:%s/",
		short(certFile), short(keyFile), serverName, port, serverName, port)
	body, err := q.get(proxyAddr, port, certFile, keyFile)
	if err != nil {
		return fmt.Errorf("the request with simon's certificate failed: %v\nproxy log:\n%s", err, prox.log.String())
	}
	q.say("%s", indent(shorten(body)))

	q.say("\n# Without a client certificate the proxy does not complete the handshake:")
	if _, err := q.get(proxyAddr, port, "", ""); err == nil {
		return errors.New("the request without a certificate got through")
	} else {
		q.say("  refused: %v", err)
	}

	q.say("\n# Simon lost his laptop: revoke his certificate. The proxy re-reads the CRL (every --reload-interval, or at once on SIGHUP).")
	reloads := prox.log.count(" reload ")
	if _, err := q.minicaRun("revoke", "simon", "--reason", "keyCompromise"); err != nil {
		return err
	}
	prox.hangUp()
	if err := prox.log.waitCount(" reload ", reloads+1, 15*time.Second); err != nil {
		return fmt.Errorf("the proxy did not reload the CRL: %v\nproxy log:\n%s", err, prox.log.String())
	}
	q.say("\n# The same request again:")
	if _, err := q.get(proxyAddr, port, certFile, keyFile); err == nil {
		return errors.New("the request with the revoked certificate got through")
	} else {
		q.say("  refused: %v", err)
	}
	q.say("\n# The proxy's log says why:")
	// The proxy writes its log line after the handshake ends: wait for it.
	if err := prox.log.waitCount("reason=revoked", 1, 15*time.Second); err != nil {
		return fmt.Errorf("the proxy logged no refusal for the revoked certificate: %v\nproxy log:\n%s", err, prox.log.String())
	}
	for _, line := range strings.Split(prox.log.String(), "\n") {
		if strings.Contains(line, "handshake-refused") {
			q.say("  %s", line)
		}
	}

	q.say("\n# Stopping the proxy and the app.")
	q.stopAll()
	q.say("  stopped")
	q.say("\nDone. The demo CA stays in %s (remove it with: rm -r %s).", q.dir, work)
	q.say("Next: the README's commands, and docs/tutorial.md for a browser that logs in with a certificate.")
	return nil
}

func (q *quickstart) say(format string, args ...any) {
	fmt.Fprintf(q.out, format+"\n", args...)
}

// command is a minica command on the demo CA.
func (q *quickstart) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, q.minica, args...)
	cmd.Env = append(withoutMinica(os.Environ()), "MINICA_DIR="+q.dir)
	return cmd
}

// minicaRun runs one minica command, printing it and its output.
func (q *quickstart) minicaRun(args ...string) (string, error) {
	q.say("$ minica %s", shellJoin(args))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := q.command(ctx, args...).CombinedOutput()
	q.say("%s", indent(string(out)))
	if err != nil {
		return "", fmt.Errorf("minica %s: %v", shellJoin(args), err)
	}
	return string(out), nil
}

// field returns the value of a "  name   value" line of minica's output.
func field(out, name string) string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == name {
			return f[1]
		}
	}
	return ""
}

// process is a minica command running in the background.
type process struct {
	cmd    *exec.Cmd
	addr   string // what follows its listening prefix
	log    *logBuffer
	exited chan error
}

// start runs a long-running minica command and waits (at most 30s) for
// the line on its stdout that starts with prefix.
func (q *quickstart) start(prefix string, args ...string) (*process, error) {
	q.say("$ minica %s &", shellJoin(args))
	cmd := q.command(context.Background(), args...)
	p := &process{cmd: cmd, log: &logBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = p.log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	q.procs = append(q.procs, p)
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		io.Copy(io.Discard, stdout)
		p.exited <- cmd.Wait()
	}()
	select {
	case line := <-lines:
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
		if !ok {
			return nil, fmt.Errorf("minica %s: no listening line (got %q)\n%s", args[0], line, p.log.String())
		}
		q.say("  %s", strings.TrimSpace(line))
		p.addr = rest
		return p, nil
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("minica %s did not start within 30s\n%s", args[0], p.log.String())
	}
}

// hangUp asks the process to reload now, where the system has SIGHUP;
// elsewhere the proxy's --reload-interval does it.
func (p *process) hangUp() {
	if runtime.GOOS != "windows" {
		p.cmd.Process.Signal(syscall.SIGHUP)
	}
}

// stopAll stops the background processes: SIGTERM (a kill where there is
// none), then a kill after 10s.
func (q *quickstart) stopAll() {
	for _, p := range q.procs {
		if runtime.GOOS == "windows" {
			p.cmd.Process.Kill()
		} else {
			p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range q.procs {
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.exited
		}
	}
	q.procs = nil
}

// get sends GET https://serverName:port/ to addr, with the client
// certificate in certFile and keyFile unless they are "", on a connection
// of its own, and returns the body of a 200 answer.
func (q *quickstart) get(addr, port, certFile, keyFile string) (string, error) {
	caPEM, err := os.ReadFile(filepath.Join(q.dir, "ca.crt"))
	if err != nil {
		return "", err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return "", errors.New("no CA certificate in ca.crt")
	}
	cfg := &tls.Config{RootCAs: roots, ServerName: serverName}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return "", err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   cfg,
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr) // curl's --resolve
		},
	}}
	resp, err := client.Get("https://" + net.JoinHostPort(serverName, port) + "/")
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) && ue.Unwrap() != nil {
			err = ue.Unwrap() // without Go's "Get URL:" prefix
		}
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}

// logBuffer collects a process's stderr.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) count(s string) int { return strings.Count(b.String(), s) }

// waitCount waits until s occurs n times in the log, polling for at most
// timeout.
func (b *logBuffer) waitCount(s string, n int, timeout time.Duration) error {
	for deadline := time.Now().Add(timeout); b.count(s) < n; {
		if time.Now().After(deadline) {
			return fmt.Errorf("no %q line within %s", strings.TrimSpace(s), timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// shorten cuts lines beyond 100 bytes (the PEM of X-SSL-Client-Cert) for
// the screen, saying how much was left out.
func shorten(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if len(l) > 100 {
			lines[i] = fmt.Sprintf("%s... (%d more bytes)", l[:80], len(l)-80)
		}
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// shellJoin quotes args for a POSIX shell where they need it.
func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@+,") == "" {
			quoted[i] = a
		} else {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(quoted, " ")
}

// withoutMinica drops the MINICA_ variables of the caller's environment: the
// demo uses its own CA directory and needs no password.
func withoutMinica(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "MINICA_") {
			out = append(out, kv)
		}
	}
	return out
}
