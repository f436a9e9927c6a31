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
// A package uses it from TestMain, which stops the server:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// and a test calls pgtest.New(t) for the URL of its own database; the
// server starts with the first such call, so that a run of other tests
// costs nothing.
package pgtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running PostgreSQL server.
type Server struct {
	dir   string // the temporary directory: data/, the socket, the log
	bin   string // the directory of initdb and pg_ctl
	cred  *credential
	port  int    // on 127.0.0.1, TLS only
	opts  string // the server's options, for a start after Pause
	count atomic.Int64
}

var (
	once    sync.Once
	server  *Server
	skipWhy string
)

// Main runs the package's tests and then stops the server, if one of them
// started it (see New).
func Main(m interface{ Run() int }) int { return Run(m.Run) }

// Run calls run (a TestingM's Run, for a TestMain that has its own
// wrapper, such as testscript.Main) and then stops the server, if a test
// started it.
func Run(run func() int) int {
	code := run()
	if server != nil {
		server.Stop()
	}
	return code
}

// New creates a fresh database on the package's server, starting the
// server on first use, and returns its URL, with the socket directory as
// host and no password (the server trusts local connections). Without a
// server it skips t, saying why. The package's TestMain must call Main
// (or Run), which stops the server.
func New(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		s, err := Start()
		if err != nil {
			skipWhy = err.Error()
			return
		}
		server = s
	})
	if server == nil {
		t.Skipf("no PostgreSQL server for this test: %s", skipWhy)
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
		cred, err := nobody()
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, and no user nobody to run PostgreSQL as: %w", err)
		}
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.cred = cred
	}
	data := filepath.Join(dir, "data")
	if out, err := s.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	// Loopback TCP with TLS and passwords (hostssl, SCRAM), for tests of
	// sslmode and of libpq's password sources; the socket trusts.
	if err := s.setupTCP(data); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c ssl=on -c ssl_cert_file=%s -c ssl_key_file=%s "+
		"-c fsync=off -c full_page_writes=off -c max_connections=200",
		s.port, dir, filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"))
	s.opts = opts
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
	runAs(cmd, s.cred)
	return cmd.CombinedOutput()
}

// setupTCP picks a free loopback port, writes a self-signed server
// certificate for 127.0.0.1 and replaces pg_hba.conf: trust on the socket,
// hostssl with SCRAM passwords on 127.0.0.1, nothing without TLS.
func (s *Server) setupTCP(data string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		filepath.Join(s.dir, "server.crt"): pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		filepath.Join(s.dir, "server.key"): pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
		filepath.Join(data, "pg_hba.conf"): []byte("local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n"),
	}
	for name, b := range files {
		if err := os.WriteFile(name, b, 0o600); err != nil {
			return err
		}
		if s.cred != nil {
			if err := os.Chown(name, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
				return err
			}
		}
	}
	return nil
}

// TCP returns the URL of the database of url (from New) over TLS on
// 127.0.0.1 as user, with no password in it: the server asks for one.
// sslmode verify-full checks the server's certificate against RootCert.
func TCP(url, user string) string {
	db := strings.TrimPrefix(url[:strings.Index(url, "?")], "postgres://postgres@/")
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=verify-full&sslrootcert=%s", user, server.port, db, RootCert())
}

// RootCert returns the file of the server's self-signed certificate.
func RootCert() string { return filepath.Join(server.dir, "server.crt") }

// URL returns the URL of database db on the server.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%d&sslmode=disable", db, s.dir, s.port)
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
