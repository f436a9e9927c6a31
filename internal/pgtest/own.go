package pgtest

import (
	"fmt"
	"path/filepath"
	"testing"
)

// Own starts a server for t alone (not the package's shared one), for a
// fault test that restarts it, and stops it when t ends. Without the
// binaries it skips t, saying why.
func Own(t testing.TB) *Server {
	t.Helper()
	s, err := Start()
	if err != nil {
		t.Skipf("no PostgreSQL server for this test: %s", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Pause stops the server (pg_ctl stop, fast mode) and keeps its data:
// every session ends, and connections are refused until Resume.
func (s *Server) Pause() error {
	if out, err := s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "fast", "-w", "-t", "60", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	return nil
}

// Resume starts the server that Pause stopped, on the same socket and port.
func (s *Server) Resume() error {
	if out, err := s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60", "-o", s.opts, "start"); err != nil {
		return fmt.Errorf("pg_ctl start: %w\n%s", err, out)
	}
	return nil
}

// Restart restarts the server as an operator would (pg_ctl restart, fast
// mode): every session ends, its transactions roll back, and new
// connections are accepted once it is up again.
func (s *Server) Restart() error {
	if out, err := s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-l", filepath.Join(s.dir, "log"), "-m", "fast", "-w", "-t", "60", "restart"); err != nil {
		return fmt.Errorf("pg_ctl restart: %w\n%s", err, out)
	}
	return nil
}
