//go:build interop

package servertest

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCRLFetch runs each web server on a host directory with no CA
// directory in it, as `minica config SERVER --host-dir` writes it, and the
// command of the job `minica config crl-fetch` writes, against `minica
// serve` run by the command of `minica config systemd-serve`: the first
// fetch installs the CRL and reloads, an unchanged CRL reloads nothing, a
// CRL of another CA (from a plain HTTP server) is never installed, and
// after a revocation the next fetch makes the server refuse the revoked
// client.
func TestCRLFetch(t *testing.T) {
	for name, fe := range map[string]func(*testing.T) frontEnd{
		"nginx": nginxFrontEnd, "apache": apacheFrontEnd, "haproxy": haproxyFrontEnd,
	} {
		t.Run(name, func(t *testing.T) { testCRLFetch(t, fe(t)) })
	}
}

func testCRLFetch(t *testing.T, fe frontEnd) {
	curl := need(t, "curl", "curl")
	p := newPKI(t)
	up := newUpstream(t)
	servePort, port := freePort(t), freePort(t)
	execStart := func(unit string) string {
		t.Helper()
		m := regexp.MustCompile(`(?m)^ExecStart=(.*)$`).FindStringSubmatch(unit)
		if m == nil {
			t.Fatalf("no ExecStart in the unit:\n%s", unit)
		}
		// systemd's quoting is sh's, once %% and $$ are undone.
		return strings.NewReplacer("%%", "%", "$$", "$").Replace(m[1])
	}
	serveUnit := minica(t, p.dir, "config", "systemd-serve", "--listen", "127.0.0.1:"+servePort, "--minica", minicaBin)
	serve := start(t, servePort, "sh", "-c", "exec "+execStart(serveUnit))
	dir := t.TempDir()
	host := filepath.Join(dir, "host")
	if err := os.Mkdir(host, 0o755); err != nil {
		t.Fatal(err)
	}

	// The web server's configuration, and the files its comments say to
	// copy into the host directory.
	conf := minica(t, p.dir, "config", fe.name, "--server-cert", "web", "--upstream", up.url,
		"--listen", "127.0.0.1:"+port, "--host-dir", host)
	copies := regexp.MustCompile(`(?m)^#   (/\S+) -> (/\S+)$`).FindAllStringSubmatch(conf, -1)
	if len(copies) != 4 {
		t.Fatalf("the configuration lists %d files to copy; want 4:\n%s", len(copies), conf)
	}
	for _, c := range copies {
		data, err := os.ReadFile(c[1])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c[2], data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	generated := filepath.Join(dir, "generated.conf")
	writeFile(t, generated, conf)

	// The fetch job; its reload counts, and runs the server's reload once
	// the server runs (the file reload holds it).
	counter, reloadFile := filepath.Join(dir, "reloads"), filepath.Join(dir, "reload.sh")
	reload := fmt.Sprintf("printf x >> %s && { [ ! -e %s ] || sh %[2]s; }", counter, reloadFile)
	fetchJob := func(url string) func() (string, error) {
		unit := minica(t, p.dir, "config", "crl-fetch", "--server", fe.name, "--url", url,
			"--host-dir", host, "--reload", reload, "--minica", minicaBin)
		line := execStart(unit)
		return func() (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			out, err := exec.CommandContext(ctx, "sh", "-c", line).CombinedOutput()
			return string(out), err
		}
	}
	fetch := fetchJob("http://127.0.0.1:" + servePort + "/crl.der")
	reloads := func() int {
		b, err := os.ReadFile(counter)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return len(b)
	}
	crlFile := filepath.Join(host, "crl.pem")

	// The first fetch installs the CRL (PEM, as the servers read it) and
	// reloads.
	if out, err := fetch(); err != nil {
		t.Fatalf("first fetch: %v\n%s\nminica serve:\n%s", err, out, serve.output())
	}
	if got := reloads(); got != 1 {
		t.Fatalf("first fetch: %d reload(s); want 1", got)
	}
	wantInstalled(t, crlFile, filepath.Join(p.dir, "crl.der"))

	s := fe.start(t, dir, generated, port)
	writeFile(t, reloadFile, fe.reloadCommand(dir, s)+"\n")
	get := func(c client) response { return get(t, curl, filepath.Join(host, "ca.pem"), port, c) }
	for _, c := range []client{p.alice, p.bob} {
		if r := get(c); r.status != "200" {
			t.Fatalf("%s: got status %q (%s); want 200\n%s", c.cert, r.status, r.detail, s.output())
		}
	}

	// An unchanged CRL: no reload, the file untouched.
	before, _ := os.Stat(crlFile)
	if out, err := fetch(); err != nil {
		t.Fatalf("second fetch: %v\n%s", err, out)
	}
	if got := reloads(); got != 1 {
		t.Errorf("an unchanged CRL: %d reload(s); want still 1", got)
	}
	if after, _ := os.Stat(crlFile); !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("an unchanged CRL rewrote %s", crlFile)
	}

	// Another CA's CRL, from a plain HTTP server, is refused: exit 1, the
	// file untouched, no reload.
	other := newCRLServer(t, filepath.Join(filepath.Dir(p.dir), "other", "crl.der"))
	if out, err := fetchJob(other.url + "/crl.der")(); err == nil || !strings.HasPrefix(out, "minica: error: ") {
		t.Errorf("another CA's CRL: the fetch gave %v; want it refused with an error\n%s", err, out)
	}
	if got := reloads(); got != 1 {
		t.Errorf("another CA's CRL: %d reload(s); want still 1", got)
	}
	wantInstalled(t, crlFile, filepath.Join(p.dir, "crl.der"))

	// A revocation: serve publishes the new CRL within a second; a fetch
	// then installs it and reloads, once, and the server refuses bob.
	minica(t, p.dir, "revoke", "bob")
	deadline := time.Now().Add(waitLimit)
	for reloads() == 1 {
		if out, err := fetch(); err != nil {
			t.Fatalf("fetch after the revocation: %v\n%s", err, out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fetch installed the new CRL within %s of the revocation\nminica serve:\n%s", waitLimit, serve.output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := reloads(); got != 2 {
		t.Fatalf("a new CRL: %d reload(s); want 2", got)
	}
	wantInstalled(t, crlFile, filepath.Join(p.dir, "crl.der"))
	// A reload replaces the workers gracefully: wait for three refusals in
	// a row.
	deadline = time.Now().Add(waitLimit)
	for inARow := 0; inARow < 3; {
		inARow++
		if !refused(get(p.bob)) {
			inARow = 0
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob was still let through %s after the fetch and the reload\n%s", waitLimit, s.output())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r := get(p.alice); r.status != "200" {
		t.Errorf("alice after bob's revocation: got status %q (%s); want 200", r.status, r.detail)
	}
}

// wantInstalled checks that file is the PEM of the DER CRL in der.
func wantInstalled(t *testing.T, file, der string) {
	t.Helper()
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(der)
	if err != nil {
		t.Fatal(err)
	}
	b, rest := pem.Decode(got)
	if b == nil || b.Type != "X509 CRL" || len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("%s is not one PEM CRL", file)
	}
	if _, err := x509.ParseRevocationList(b.Bytes); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if !bytes.Equal(b.Bytes, want) {
		t.Fatalf("%s is not the CRL served (%s)", file, der)
	}
}

// crlServer serves the DER file it holds at /crl.der, as a plain HTTP
// server would.
type crlServer struct{ url string }

func newCRLServer(t *testing.T, file string) *crlServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/crl.der" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/pkix-crl")
			http.ServeFile(w, r, file)
		}),
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &crlServer{url: "http://" + ln.Addr().String()}
}
