//go:build interop

package browsertest

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// process is a long-running minica command (serve, echo) of the test.
type process struct {
	cmd    *exec.Cmd
	log    *lockedBuffer
	exited chan struct{} // closed when the process has exited
}

// startMinica runs minica with args and waits (bounded) until its log
// matches ready; it returns the process and the match. The process gets
// SIGTERM when the test ends.
func (m *minica) startMinica(t *testing.T, ready *regexp.Regexp, args ...string) (*process, []string) {
	t.Helper()
	p, match, err := m.tryStartMinica(t, ready, args...)
	if err != nil {
		t.Fatal(err)
	}
	return p, match
}

// tryStartMinica is startMinica that returns an error, with the process's
// log, when it exits or does not log ready within 15s.
func (m *minica) tryStartMinica(t *testing.T, ready *regexp.Regexp, args ...string) (*process, []string, error) {
	t.Helper()
	p := &process{log: &lockedBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(m.bin, args...)
	p.cmd.Env = append(os.Environ(), "MINICA_DIR="+m.dir)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting minica %s: %w", args[0], err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(t, args[0]) })
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if match := ready.FindStringSubmatch(p.log.String()); match != nil {
			return p, match, nil
		}
		select {
		case <-p.exited:
			if match := ready.FindStringSubmatch(p.log.String()); match != nil {
				return p, match, nil
			}
			return nil, nil, fmt.Errorf("minica %s exited before it started (%v); log:\n%s", args[0], p.cmd.ProcessState, p.log)
		case <-deadline.C:
			return nil, nil, fmt.Errorf("minica %s did not start within 15s; log:\n%s", args[0], p.log)
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM to a process still running and waits (bounded) until
// it exits.
func (p *process) stop(t *testing.T, name string) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		t.Errorf("minica %s did not stop within 10s of SIGTERM", name)
	}
}
