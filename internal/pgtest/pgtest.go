// Package pgtest starts a PostgreSQL server for the tests of a package and
// hands each test a fresh database on it.
//
// The server is Debian's (or any) PostgreSQL: initdb and pg_ctl are looked
// up in PATH, then in /usr/lib/postgresql/*/bin. Its data directory and its
// Unix socket live in one temporary directory, it listens on no TCP port,
// and it is stopped when the package's tests end. initdb refuses to run as
// root, so as root the server runs as the user nobody, in a directory
// given to nobody. Without the binaries, or as root without nobody, New
// skips the test and says why.
//
// A package uses it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// and a test calls pgtest.New(t) for the URL of its own database.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running PostgreSQL server.
type Server struct {
	dir   string // the temporary directory: data/, the socket, the log
	bin   string // the directory of initdb and pg_ctl
	cred  *syscall.Credential
	count atomic.Int64
}

var (
	server  *Server
	skipWhy string
)

// Main starts a server, runs the package's tests and stops it. When no
// server can be started the tests still run: New skips each one, saying
// why.
func Main(m *testing.M) int {
	s, err := Start()
	if err != nil {
		skipWhy = err.Error()
	}
	server = s
	code := m.Run()
	if s != nil {
		s.Stop()
	}
	return code
}

// New creates a fresh database on the package's server and returns its URL,
// with the socket directory as host and no password (the server trusts
// local connections). Without a server it skips t with the reason.
func New(t testing.TB) string {
	t.Helper()
	if server == nil {
		why := skipWhy
		if why == "" {
			why = "pgtest.Main was not called from TestMain"
		}
		t.Skipf("no PostgreSQL server for this test: %s", why)
	}
	url, err := server.CreateDatabase()
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// Binaries returns the directory holding initdb and pg_ctl.
func Binaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("initdb and pg_ctl are not in PATH nor in /usr/lib/postgresql/*/bin (install the Debian package postgresql)")
}

func versionOf(bin string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return v
}

// Start runs initdb in a new temporary directory and starts the server on
// a Unix socket there.
func Start() (*Server, error) {
	bin, err := Binaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, and no user nobody to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	data := filepath.Join(dir, "data")
	if out, err := s.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	opts := fmt.Sprintf("-c listen_addresses='' -k %s -c fsync=off -c full_page_writes=off -c max_connections=200", dir)
	if out, err := s.run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, log)
	}
	return s, nil
}

func (s *Server) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd.CombinedOutput()
}

// URL returns the URL of database db on the server.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&sslmode=disable", db, s.dir)
}

// CreateDatabase creates a new empty database and returns its URL.
func (s *Server) CreateDatabase() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgtest: connecting: %w", err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), s.count.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("pgtest: creating database %s: %w", name, err)
	}
	return s.URL(name), nil
}

// Exec runs sql on database url, for tests that reach around the code
// under test (a restart, a newer schema).
func Exec(t testing.TB, url, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// Stop stops the server at once and removes its directory.
func (s *Server) Stop() {
	s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
	os.RemoveAll(s.dir)
}
