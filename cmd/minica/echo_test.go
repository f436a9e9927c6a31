package main

import (
	"bufio"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEchoServes runs `minica echo` as a process on a free loopback port,
// sends it a request, and stops it with SIGTERM.
func TestEchoServes(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("minica", "echo", "--listen", "127.0.0.1:0")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	defer func() {
		cmd.Process.Kill()
		<-exited
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	go func() { exited <- cmd.Wait() }()
	if err != nil {
		t.Fatalf("reading the listening line: %v; stderr:\n%s", err, stderr)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "minica echo: listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("listening line %q", line)
	}
	req, _ := http.NewRequest("GET", url+"/who?x=1", nil)
	req.Header.Set("X-SSL-Client-CN", "simon")
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := string(body); !strings.HasPrefix(got, "GET /who?x=1 HTTP/1.1\n") || !strings.Contains(got, "\nX-Ssl-Client-Cn: simon\n") {
		t.Errorf("echo answered %q", got)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the deferred wait
		if err != nil {
			t.Errorf("minica echo exited with %v after SIGTERM; stderr:\n%s", err, stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("minica echo still running 20s after SIGTERM")
	}
	for _, want := range []string{`minica echo: GET "/who?x=1" from 127.0.0.1:`, "minica echo: stopped\n"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}
