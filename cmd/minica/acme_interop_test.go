//go:build interop

package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"minica/internal/testport"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"minica/ca"
	"minica/internal/certlint"
)

// The tests of this file get certificates from `minica serve --acme` with
// real ACME clients (certbot, lego), as a fleet would: everything on
// 127.0.0.1, the names of svc.example.com resolved by a dnsmasq the test
// runs, which serve's validator asks (--acme-resolver).

// acmeSetup is a CA whose serve answers ACME on 127.0.0.1.
type acmeSetup struct {
	dir       string // the CA directory
	caFile    string // its ca.crt, which clients trust for serve's HTTPS
	directory string // the ACME directory URL
	httpPort  int    // where serve validates http-01
	tlsPort   int    // and tls-alpn-01
	dns       *dnsmasq
	serve     *serveProc
}

// newACMESetup makes a CA, starts dnsmasq and serve --acme, the validator
// allowed to reach 127.0.0.1 on free ports for http-01 and tls-alpn-01.
func newACMESetup(t *testing.T) *acmeSetup {
	t.Helper()
	dir := newCADir(t)
	mustMinica(t, dir, "issue", "server", "pki", "--dns", "localhost", "--ip", "127.0.0.1")
	s := &acmeSetup{dir: dir, caFile: filepath.Join(dir, "ca.crt"), dns: startDnsmasq(t),
		httpPort: testport.Free(t), tlsPort: testport.Free(t)}
	s.serve = startServe(t, dir, "--listen", "", "--listen-tls", "127.0.0.1:0", "--server-cert", "pki", "--acme",
		"--acme-validate-allow", "127.0.0.1/32", "--acme-resolver", s.dns.addr,
		"--acme-http-port", strconv.Itoa(s.httpPort), "--acme-tls-port", strconv.Itoa(s.tlsPort))
	s.directory = s.serve.base + "/acme/directory"
	return s
}

// binding makes an external account binding with args and returns it,
// with its key ID and HMAC key.
func (s *acmeSetup) binding(t *testing.T, name string, args ...string) acmeBindingJSON {
	t.Helper()
	out := mustMinica(t, s.dir, append([]string{"acme", "account", "add", name, "--json"}, args...)...)
	var b acmeBindingJSON
	if err := json.Unmarshal([]byte(out), &b); err != nil || b.KeyID == "" || b.HMACKey == "" {
		t.Fatalf("acme account add --json: %v\n%s", err, out)
	}
	return b
}

// accounts returns the ACME accounts a binding bound.
func (s *acmeSetup) accounts(t *testing.T, name string) []string {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(mustMinica(t, s.dir, "acme", "account", "list", "--json")), "\n") {
		var b acmeBindingJSON
		if err := json.Unmarshal([]byte(line), &b); err != nil {
			t.Fatalf("acme account list --json: %v\n%s", err, line)
		}
		if b.Name == name {
			return b.Accounts
		}
	}
	t.Fatalf("acme account list --json has no binding %s", name)
	return nil
}

// record returns the record of serial, as show --json prints it.
func (s *acmeSetup) record(t *testing.T, serial string) shownRecord {
	t.Helper()
	out := mustMinica(t, s.dir, "show", serial, "--json")
	var r shownRecord
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("show %s --json: %v\n%s", serial, err, out)
	}
	return r
}

// listed returns the records of list --json of name.
func (s *acmeSetup) listed(t *testing.T, name string) []shownRecord {
	t.Helper()
	var out []shownRecord
	for _, line := range strings.Split(strings.TrimSpace(mustMinica(t, s.dir, "list", "--json")), "\n") {
		var r shownRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("list --json: %v\n%s", err, line)
		}
		if r.Name == name {
			out = append(out, r)
		}
	}
	return out
}

// checkIssued checks what a client got for name in certFile (the leaf
// first, perhaps followed by the chain): openssl verifies it with the CA
// as the only trust anchor and chainFile as untrusted intermediates, it
// names name alone, zlint finds nothing, and the CA has its record, valid,
// with an ACME account. It returns the leaf's serial (hex).
func (s *acmeSetup) checkIssued(t *testing.T, openssl, name, certFile, chainFile string) string {
	t.Helper()
	leaf := firstCert(t, certFile)
	args := []string{"verify", "-CAfile", s.caFile, "-purpose", "sslserver", "-verify_hostname", name}
	if chainFile != "" {
		args = append(args, "-untrusted", chainFile)
	}
	if got := runTool(t, openssl, append(args, certFile)...); !strings.Contains(got, ": OK") {
		t.Errorf("openssl verify %s: %s", certFile, got)
	}
	if !slices.Equal(leaf.DNSNames, []string{name}) || len(leaf.IPAddresses) != 0 {
		t.Errorf("%s names %v %v; want %s alone", certFile, leaf.DNSNames, leaf.IPAddresses, name)
	}
	certlint.Certificate(t, leaf.Raw)
	serial := ca.SerialHex(leaf.SerialNumber)
	r := s.record(t, serial)
	if r.Name != name || r.Status != "valid" || r.ACMEAccount == "" || r.SHA256 == "" {
		t.Errorf("show %s: name %q status %q account %q; want %s, valid, with its ACME account", serial, r.Name, r.Status, r.ACMEAccount, name)
	}
	return serial
}

// shownRecord is the part of a record of show and list --json read here.
type shownRecord struct {
	Serial      string `json:"serial"`
	Name        string `json:"name"`
	Status      string `json:"status"`
	Reason      string `json:"reason"`
	SHA256      string `json:"sha256"`
	ACMEAccount string `json:"acme_account"`
}

// firstCert parses the first certificate of a PEM file.
func firstCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(readTestFile(t, file))
	if block == nil {
		t.Fatalf("%s holds no PEM", file)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return cert
}

// runClient runs an ACME client (bounded by timeout) with env added to
// the test's, and returns its combined output and error.
func runClient(t *testing.T, timeout time.Duration, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("still running after %s: %w", timeout, err)
	}
	return string(out), err
}

// mustClient is runClient that fails the test when the client fails.
func mustClient(t *testing.T, s *acmeSetup, env []string, name string, args ...string) string {
	t.Helper()
	out, err := runClient(t, 60*time.Second, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s\nserve:\n%s", name, strings.Join(args, " "), err, out, s.serve.stderr)
	}
	return out
}

// dnsmasq is a dnsmasq on 127.0.0.1 that answers the names under
// svc.example.com with 127.0.0.1 and the TXT records set; dnsmasq reads
// TXT records only when it starts, so setting one restarts it on its port.
type dnsmasq struct {
	bin  string
	port int
	addr string // 127.0.0.1:PORT

	mu   sync.Mutex
	txt  map[string]string // FQDN -> value
	cmd  *exec.Cmd
	done chan struct{}
	log  *syncBuffer
}

func startDnsmasq(t *testing.T) *dnsmasq {
	t.Helper()
	d := &dnsmasq{bin: needTool(t, "dnsmasq", "dnsmasq"), port: freeUDPAndTCPPort(t), txt: map[string]string{}}
	d.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(d.port))
	t.Cleanup(func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.stop()
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.start(); err != nil {
		t.Fatal(err)
	}
	return d
}

// freeUDPAndTCPPort returns a port of 127.0.0.1 free for both UDP and TCP
// a moment ago: dnsmasq binds both.
func freeUDPAndTCPPort(t *testing.T) int {
	t.Helper()
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := pc.LocalAddr().(*net.UDPAddr).Port
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		pc.Close()
		if err == nil {
			ln.Close()
			return port
		}
	}
	t.Fatal("no port of 127.0.0.1 free for both UDP and TCP")
	return 0
}

// start runs dnsmasq with the TXT records set and waits until it answers
// them. The caller holds d.mu.
func (d *dnsmasq) start() error {
	args := []string{"-k", "--conf-file=/dev/null", "--port=" + strconv.Itoa(d.port), "--listen-address=127.0.0.1",
		"--bind-interfaces", "--no-resolv", "--no-hosts", "--pid-file=", "--log-facility=-",
		// --local beside --address: without it dnsmasq forwards (and,
		// with no upstream, refuses) the AAAA queries of these names.
		"--address=/svc.example.com/127.0.0.1", "--local=/svc.example.com/"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=nobody") // dnsmasq drops root after binding; the default user may not exist
	}
	for fqdn, v := range d.txt {
		args = append(args, "--txt-record="+strings.TrimSuffix(fqdn, ".")+","+v)
	}
	d.log = &syncBuffer{}
	d.cmd = exec.Command(d.bin, args...)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		return fmt.Errorf("starting dnsmasq: %w", err)
	}
	d.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(d.cmd, d.done)
	return d.ready()
}

// ready waits up to 5 s for dnsmasq to answer a name and every TXT record.
func (d *dnsmasq) ready() error {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, network, d.addr)
	}}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := d.answers(r)
		if err == nil {
			return nil
		}
		select {
		case <-d.done:
			return fmt.Errorf("dnsmasq exited: %s", d.log)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dnsmasq on %s: %v after 5s\n%s", d.addr, err, d.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (d *dnsmasq) answers(r *net.Resolver) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	addrs, err := r.LookupHost(ctx, "probe.svc.example.com")
	if err != nil || !slices.Contains(addrs, "127.0.0.1") {
		return fmt.Errorf("probe.svc.example.com: %v %v", addrs, err)
	}
	for fqdn, v := range d.txt {
		got, err := r.LookupTXT(ctx, fqdn)
		if err != nil || !slices.Contains(got, v) {
			return fmt.Errorf("TXT %s: %v %v", fqdn, got, err)
		}
	}
	return nil
}

// stop ends dnsmasq and waits for it. The caller holds d.mu.
func (d *dnsmasq) stop() {
	if d.cmd == nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
	}
	d.cmd = nil
}

// setTXT sets (value "") or removes the TXT record of fqdn and restarts
// dnsmasq with it.
func (d *dnsmasq) setTXT(fqdn, value string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if value == "" {
		delete(d.txt, fqdn)
	} else {
		d.txt[fqdn] = value
	}
	d.stop()
	return d.start()
}

// execProvider writes the script of lego's exec DNS provider (EXEC_PATH):
// lego runs it as SCRIPT present|cleanup FQDN VALUE, and it asks the test,
// over HTTP with curl, to set or remove the TXT record in d.
func (d *dnsmasq) execProvider(t *testing.T) string {
	t.Helper()
	curl := needTool(t, "curl", "curl")
	ctl := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fqdn, value := r.FormValue("fqdn"), r.FormValue("value")
		if r.URL.Path == "/cleanup" {
			value = ""
		}
		if err := d.setTXT(fqdn, value); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}))
	t.Cleanup(ctl.Close)
	script := filepath.Join(t.TempDir(), "dns-exec")
	body := fmt.Sprintf("#!/bin/sh\n# lego's exec DNS provider: $1 is present or cleanup, $2 the FQDN, $3 the value.\n"+
		"exec %s -fsS --max-time 20 --data-urlencode \"fqdn=$2\" --data-urlencode \"value=$3\" %s/\"$1\"\n", curl, ctl.URL)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// certbot (standalone http-01, with EAB) gets a certificate for a name of
// its binding that openssl verifies and zlint passes, recorded with its
// account; renews it; revokes it (keyCompromise), which the record shows;
// and is refused, rejectedIdentifier, a name outside its binding.
func TestACMECertbot(t *testing.T) {
	t.Parallel()
	certbot := needTool(t, "certbot", "certbot")
	openssl := needTool(t, "openssl", "openssl")
	s := newACMESetup(t)
	b := s.binding(t, "certbot-fleet", "--dns-suffix", "svc.example.com")
	work := t.TempDir()
	env := []string{"REQUESTS_CA_BUNDLE=" + s.caFile}
	dirs := []string{"--config-dir", filepath.Join(work, "config"), "--work-dir", filepath.Join(work, "work"),
		"--logs-dir", filepath.Join(work, "logs"), "--non-interactive"}
	standalone := []string{"certonly", "--standalone", "--http-01-address", "127.0.0.1", "--http-01-port", strconv.Itoa(s.httpPort),
		"--server", s.directory}
	const name = "web1.svc.example.com"
	live := filepath.Join(work, "config", "live", name)

	mustClient(t, s, env, certbot, slices.Concat(standalone, dirs, []string{"--eab-kid", b.KeyID, "--eab-hmac-key", b.HMACKey,
		"-d", name, "--agree-tos", "-m", "ops@example.com"})...)
	first := s.checkIssued(t, openssl, name, filepath.Join(live, "cert.pem"), filepath.Join(live, "chain.pem"))
	accts := s.accounts(t, "certbot-fleet")
	if len(accts) != 1 || s.record(t, first).ACMEAccount != accts[0] {
		t.Errorf("binding's accounts %v; record's account %q; want the one account", accts, s.record(t, first).ACMEAccount)
	}

	// Without --no-random-sleep-on-renew, certbot renew sleeps up to 8
	// minutes when it has no terminal.
	mustClient(t, s, env, certbot, slices.Concat([]string{"renew", "--force-renewal", "--no-random-sleep-on-renew"}, dirs)...)
	second := s.checkIssued(t, openssl, name, filepath.Join(live, "cert.pem"), filepath.Join(live, "chain.pem"))
	if second == first {
		t.Fatalf("certbot renew --force-renewal kept serial %s", first)
	}
	if recs := s.listed(t, name); len(recs) != 2 {
		t.Errorf("list --json has %d records of %s; want the first and its renewal", len(recs), name)
	}

	mustClient(t, s, env, certbot, slices.Concat([]string{"revoke", "--server", s.directory, "--cert-path", filepath.Join(live, "cert.pem"),
		"--reason", "keycompromise", "--no-delete-after-revoke"}, dirs)...)
	if r := s.record(t, second); r.Status != "revoked" || r.Reason != "keyCompromise" {
		t.Errorf("after certbot revoke: %s is %s (%s); want revoked (keyCompromise)", second, r.Status, r.Reason)
	}
	if r := s.record(t, first); r.Status != "valid" {
		t.Errorf("after certbot revoke of the renewal: the first, %s, is %s; want valid", first, r.Status)
	}

	// certbot 2.1 on Python 3.11 then fails on its own error object
	// ("AttributeError: can't set attribute"): the problem is in its log.
	out, err := runClient(t, 60*time.Second, env, certbot, slices.Concat(standalone, dirs, []string{"-d", "other.example.com"})...)
	if err == nil {
		t.Fatalf("certbot for other.example.com, outside the binding, succeeded:\n%s", out)
	}
	log := string(readTestFile(t, filepath.Join(work, "logs", "letsencrypt.log")))
	if !strings.Contains(out+log, "urn:ietf:params:acme:error:rejectedIdentifier") {
		t.Errorf("certbot for other.example.com: no rejectedIdentifier in its output or log:\n%s\n%s", out, log)
	}
	if recs := s.listed(t, "other.example.com"); len(recs) != 0 {
		t.Errorf("list --json has %d records of other.example.com; want none", len(recs))
	}
}

// lego gets a certificate by each challenge serve validates: http-01 and
// tls-alpn-01 on its own listeners, dns-01 through its exec provider,
// which puts the TXT record into the dnsmasq serve's validator asks. Each
// verifies with openssl, passes zlint, and is recorded with lego's
// account; renew gets a new serial, and revoke shows in the record.
func TestACMELego(t *testing.T) {
	t.Parallel()
	lego := needTool(t, "lego", "lego")
	openssl := needTool(t, "openssl", "openssl")
	s := newACMESetup(t)
	b := s.binding(t, "lego-fleet", "--dns-suffix", "svc.example.com")
	path := t.TempDir()
	env := []string{"LEGO_CA_CERTIFICATES=" + s.caFile, "EXEC_PATH=" + s.dns.execProvider(t)}
	global := []string{"--server", s.directory, "--eab", "--kid", b.KeyID, "--hmac", b.HMACKey,
		"--email", "ops@example.com", "--path", path, "--accept-tos"}
	httpSolver := []string{"--http", "--http.port", "127.0.0.1:" + strconv.Itoa(s.httpPort)}
	crt := func(name string) (string, string) {
		return filepath.Join(path, "certificates", name+".crt"), filepath.Join(path, "certificates", name+".issuer.crt")
	}
	serials := map[string]string{}
	for _, c := range []struct {
		challenge, name string
		solver          []string
	}{
		{"http-01", "web2.svc.example.com", httpSolver},
		{"tls-alpn-01", "web3.svc.example.com", []string{"--tls", "--tls.port", "127.0.0.1:" + strconv.Itoa(s.tlsPort)}},
		// lego's own propagation check asks the zone's authoritative
		// servers, which dnsmasq is not: serve's validator is the check.
		{"dns-01", "web4.svc.example.com", []string{"--dns", "exec", "--dns.resolvers", s.dns.addr, "--dns.disable-cp"}},
	} {
		t.Run(c.challenge, func(t *testing.T) {
			out := mustClient(t, s, env, lego, slices.Concat(global, c.solver, []string{"-d", c.name, "run"})...)
			if !strings.Contains(out, "["+c.name+"] acme: use "+c.challenge+" solver") {
				t.Errorf("lego did not use %s:\n%s", c.challenge, out)
			}
			leaf, chain := crt(c.name)
			serials[c.name] = s.checkIssued(t, openssl, c.name, leaf, chain)
		})
	}
	if t.Failed() {
		return
	}
	if accts := s.accounts(t, "lego-fleet"); len(accts) != 1 || s.record(t, serials["web4.svc.example.com"]).ACMEAccount != accts[0] {
		t.Errorf("binding's accounts %v; want lego's one account, which ordered every certificate", accts)
	}

	// Without --no-random-sleep, lego renew sleeps up to 8 minutes.
	const name = "web2.svc.example.com"
	mustClient(t, s, env, lego, slices.Concat(global, httpSolver, []string{"-d", name, "renew", "--days", "9999", "--no-random-sleep"})...)
	leaf, chain := crt(name)
	renewed := s.checkIssued(t, openssl, name, leaf, chain)
	if renewed == serials[name] {
		t.Fatalf("lego renew kept serial %s", renewed)
	}
	mustClient(t, s, env, lego, slices.Concat(global, []string{"-d", name, "revoke", "--reason", "5"})...)
	if r := s.record(t, renewed); r.Status != "revoked" || r.Reason != "cessationOfOperation" {
		t.Errorf("after lego revoke: %s is %s (%s); want revoked (cessationOfOperation)", renewed, r.Status, r.Reason)
	}
}

// Twenty lego processes at once, each with its own account of one
// binding (--accounts 20) and its own name, all get their certificate:
// serve's accounts, orders, validations and issuance hold under
// concurrency. They share the one http-01 port, as a fleet behind one web
// server does, through lego's webroot mode. A 21st account is refused.
func TestACMEConcurrentLego(t *testing.T) {
	t.Parallel()
	const clients = 20
	lego := needTool(t, "lego", "lego")
	openssl := needTool(t, "openssl", "openssl")
	s := newACMESetup(t)
	b := s.binding(t, "lego-many", "--dns-suffix", "svc.example.com", "--accounts", strconv.Itoa(clients))
	webroot := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(s.httpPort))
	if err != nil {
		t.Fatal(err)
	}
	web := &http.Server{Handler: http.FileServer(http.Dir(webroot)), ReadHeaderTimeout: 5 * time.Second}
	go web.Serve(ln)
	t.Cleanup(func() { web.Close() })

	env := []string{"LEGO_CA_CERTIFICATES=" + s.caFile}
	legoArgs := func(path, name string) []string {
		return []string{"--server", s.directory, "--eab", "--kid", b.KeyID, "--hmac", b.HMACKey, "--email", "ops@example.com",
			"--path", path, "--accept-tos", "--http", "--http.webroot", webroot, "-d", name, "run"}
	}
	type result struct {
		name, path, out string
		err             error
	}
	results := make([]result, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range clients {
		results[i] = result{name: fmt.Sprintf("fleet%02d.svc.example.com", i), path: t.TempDir()}
		wg.Go(func() {
			r := &results[i]
			r.out, r.err = runClient(t, 60*time.Second, env, lego, legoArgs(r.path, r.name)...)
		})
	}
	wg.Wait()
	t.Logf("%d lego processes at once: %s", clients, time.Since(start).Round(time.Millisecond))
	serials := map[string]bool{}
	for _, r := range results {
		if r.err != nil {
			t.Errorf("lego for %s: %v\n%s", r.name, r.err, r.out)
			continue
		}
		leaf := filepath.Join(r.path, "certificates", r.name+".crt")
		serials[s.checkIssued(t, openssl, r.name, leaf, filepath.Join(r.path, "certificates", r.name+".issuer.crt"))] = true
	}
	if t.Failed() {
		t.Fatalf("serve:\n%s", s.serve.stderr)
	}
	if len(serials) != clients {
		t.Errorf("%d distinct serials for %d certificates", len(serials), clients)
	}
	if accts := s.accounts(t, "lego-many"); len(accts) != clients {
		t.Errorf("the binding bound %d accounts; want %d", len(accts), clients)
	}

	out, err := runClient(t, 60*time.Second, env, lego, legoArgs(t.TempDir(), "fleet99.svc.example.com")...)
	if err == nil || !strings.Contains(out, "urn:ietf:params:acme:error:unauthorized") {
		t.Errorf("lego with a 21st account key: %v; want refused, unauthorized\n%s", err, out)
	}
}
