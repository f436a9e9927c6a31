//go:build interop

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"minica/ca"
)

// Caddy (Debian's 2.6.2) with minica as its ACME CA, configured the way
// docs/acme.md shows: it gets a certificate for its site, serves it, and
// renews it on its own when a third of its life is left. Its http_port and
// https_port are serve's --acme-http-port and --acme-tls-port, so both of
// the challenges it may choose, http-01 and tls-alpn-01, reach it.
//
// The binding's lifetime is 8m, so that Caddy renews within the test: a
// certificate's life counts from its notBefore, backdated 5m, so it has 3m
// left when issued, and Caddy renews in the last third (2m40s), 20s after
// issuance; it looks every renew_interval (2s here). At 7m30s or less a
// certificate would be in its last third when issued, and Caddy would
// renew it again and again.
//
// Revocation through Caddy is not proved here: Caddy 2.6 has no command
// that revokes (certmagic's RevokeCert is not reachable from its CLI or
// its configuration). Nor is its reaction to a revocation: it learns of
// one only from OCSP, which these certificates do not name, and its
// certmagic (0.17) reads no renewal information (RFC 9773).
func TestACMECaddy(t *testing.T) {
	t.Parallel()
	caddy := needTool(t, "caddy", "caddy")
	curl := needTool(t, "curl", "curl")
	openssl := needTool(t, "openssl", "openssl")
	s := newACMESetup(t)
	b := s.binding(t, "caddy-fleet", "--dns-suffix", "svc.example.com", "--lifetime", "8m")
	const name = "web5.svc.example.com"
	work := t.TempDir()
	caddyfile := filepath.Join(work, "Caddyfile")
	// default_bind keeps Caddy on 127.0.0.1; skip_install_trust keeps it
	// from touching the system's trust store for its own local CA.
	config := fmt.Sprintf(`{
	acme_ca %s
	acme_ca_root %s
	acme_eab {
		key_id %s
		mac_key %s
	}
	email ops@example.com
	http_port %d
	https_port %d
	default_bind 127.0.0.1
	storage file_system {
		root %s
	}
	admin off
	renew_interval 2s
	skip_install_trust
}

%s {
	respond "hello from caddy"
}
`, s.directory, s.caFile, b.KeyID, b.HMACKey, s.httpPort, s.tlsPort, filepath.Join(work, "storage"), name)
	if err := os.WriteFile(caddyfile, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startCaddy(t, caddy, work, caddyfile)
	port := strconv.Itoa(s.tlsPort)
	addr := net.JoinHostPort("127.0.0.1", port)
	get := func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, curl, "-fsS", "--max-time", "5", "--cacert", s.caFile,
			"--resolve", name+":"+port+":127.0.0.1", "https://"+name+":"+port+"/").CombinedOutput()
		return string(out), err
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\ncaddy:\n%s\nserve:\n%s", append(args, c.log, s.serve.stderr)...)
	}

	start := time.Now()
	var body string
	for deadline := start.Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		out, err := get()
		if err == nil {
			body = out
			break
		}
		if time.Now().After(deadline) {
			fail("curl https://%s/ still failing 30s after Caddy started: %v\n%s", name, err, out)
		}
	}
	t.Logf("Caddy got and served its certificate in %s", time.Since(start).Round(time.Millisecond))
	if body != "hello from caddy" {
		t.Errorf("curl https://%s/: %q; want %q", name, body, "hello from caddy")
	}
	leaf := servedCert(t, s, openssl, addr, name, work, "first")
	first := ca.SerialHex(leaf.SerialNumber)
	accts := s.accounts(t, "caddy-fleet")
	recs := s.listed(t, name)
	if len(accts) != 1 || len(recs) != 1 || recs[0].Serial != first || recs[0].ACMEAccount != accts[0] {
		t.Errorf("binding's accounts %v; list --json of %s: %+v; want one record, %s, of the one account", accts, name, recs, first)
	}

	// Caddy renews when the last third of the certificate's life begins;
	// wait for that and 30s more for it to notice and get the successor.
	renewAt := leaf.NotAfter.Add(-leaf.NotAfter.Sub(leaf.NotBefore) / 3)
	t.Logf("waiting for Caddy to renew at %s (in %s)", renewAt.Format(time.TimeOnly), time.Until(renewAt).Round(time.Second))
	var second string
	for deadline := renewAt.Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if serial := ca.SerialHex(dialCaddy(t, addr, name, s.caFile)[0].SerialNumber); serial != first {
			second = serial
			break
		}
		if time.Now().After(deadline) {
			fail("Caddy still serves %s 30s after its renewal window opened at %s", first, renewAt.Format(time.TimeOnly))
		}
	}
	t.Logf("Caddy renewed %s after it started", time.Since(start).Round(time.Millisecond))
	if got := ca.SerialHex(servedCert(t, s, openssl, addr, name, work, "renewed").SerialNumber); got != second {
		t.Errorf("served %s, then %s; want the renewal, %s, still", second, got, second)
	}
	if out, err := get(); err != nil || out != "hello from caddy" {
		t.Errorf("curl https://%s/ after renewal: %q %v; want %q", name, out, err, "hello from caddy")
	}
	recs = s.listed(t, name)
	if len(recs) < 2 {
		t.Errorf("list --json has %d records of %s; want the first and its renewal", len(recs), name)
	}
	for _, r := range recs {
		if r.ACMEAccount != accts[0] || r.Status != "valid" {
			t.Errorf("record %s of %s: account %q, %s; want %s, valid", r.Serial, name, r.ACMEAccount, r.Status, accts[0])
		}
	}
}

// caddyProc is a `caddy run` the test started.
type caddyProc struct {
	log *syncBuffer
}

// startCaddy runs caddy with caddyfile, its home and XDG directories in
// work, for at most 3 minutes; the test's cleanup stops it (SIGINT, then
// SIGKILL after 5s) and waits for it.
func startCaddy(t *testing.T, caddy, work, caddyfile string) *caddyProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, caddy, "run", "--config", caddyfile, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+work, "XDG_DATA_HOME="+filepath.Join(work, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(work, "config"), "XDG_CACHE_HOME="+filepath.Join(work, "cache"))
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	p := &caddyProc{log: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting caddy: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	return p
}

// dialCaddy makes a TLS connection to addr for name, trusting only the
// CA, and returns the certificates served, the leaf first.
func dialCaddy(t *testing.T, addr, name, caFile string) []*x509.Certificate {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(readTestFile(t, caFile)) {
		t.Fatalf("%s holds no certificate", caFile)
	}
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{ServerName: name, RootCAs: pool}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("TLS to %s for %s: %v", addr, name, err)
	}
	defer conn.Close()
	return conn.(*tls.Conn).ConnectionState().PeerCertificates
}

// servedCert writes what addr serves for name to work/label.pem (the leaf)
// and work/label-chain.pem (the rest, if any), checks them with
// s.checkIssued, and returns the leaf.
func servedCert(t *testing.T, s *acmeSetup, openssl, addr, name, work, label string) *x509.Certificate {
	t.Helper()
	certs := dialCaddy(t, addr, name, s.caFile)
	var leaf, chain strings.Builder
	pem.Encode(&leaf, &pem.Block{Type: "CERTIFICATE", Bytes: certs[0].Raw})
	for _, c := range certs[1:] {
		pem.Encode(&chain, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	leafFile, chainFile := filepath.Join(work, label+".pem"), ""
	if err := os.WriteFile(leafFile, []byte(leaf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if chain.Len() > 0 {
		chainFile = filepath.Join(work, label+"-chain.pem")
		if err := os.WriteFile(chainFile, []byte(chain.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s.checkIssued(t, openssl, name, leafFile, chainFile)
	return certs[0]
}
