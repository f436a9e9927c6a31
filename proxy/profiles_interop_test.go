//go:build interop

package proxy

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"minica/identity"
	"minica/internal/testca"
	"minica/internal/testdn"
)

// The figures docs/proxy.md states: of the headers the apache and nginx
// profiles send for the subjects of TestProfilesMatchServers, how many are
// byte for byte what Apache (mod_ssl and mod_headers) and nginx forward.
const (
	apacheIdentical, apacheCompared = 73, 84
	nginxIdentical, nginxCompared   = 44, 45
)

// knownDifferences are the (server, subject, header) triples where minica
// deliberately differs from the real server, with the reason docs/proxy.md
// gives. The test fails on any other difference, and on a listed one that
// has gone away.
var knownDifferences = map[string]string{
	"apache utf8 X-Ssl-Client-S-Dn":            rawUTF8,
	"apache utf8 X-Ssl-Client-S-Dn-Cn":         rawUTF8,
	"apache known-oids X-Ssl-Client-S-Dn":      rawUTF8,
	"apache string-types X-Ssl-Client-S-Dn":    rawUTF8,
	"apache string-types X-Ssl-Client-S-Dn-Cn": rawUTF8,
	"apache string-types X-Ssl-Client-S-Dn-O":  rawUTF8,
	"apache spaces X-Ssl-Client-S-Dn":          trailingSpace,
	"nginx spaces X-Ssl-Client-S-Dn":           trailingSpace,
	"apache spaces X-Ssl-Client-S-Dn-Cn":       edgeSpaces,
	"apache spaces X-Ssl-Client-S-Dn-O":        edgeSpaces,
	"apache spaces X-Ssl-Client-S-Dn-Ou":       edgeSpaces,
	"apache lone X-Ssl-Client-S-Dn-Ou":         edgeSpaces,
}

const (
	rawUTF8       = `mod_ssl sends raw UTF-8; minica escapes each byte as \XX`
	trailingSpace = `the server sends "\ " last, which HTTP strips to "\"; minica sends "\20"`
	edgeSpaces    = `mod_ssl sends leading and trailing spaces raw, which HTTP strips; minica sends \20`
)

// trickySubjects are the client subjects compared, in DER order (the DN
// string shows them reversed).
func trickySubjects() []struct {
	name   string
	rdns   []testdn.RDNSET
	emails []string
} {
	return []struct {
		name   string
		rdns   []testdn.RDNSET
		emails []string
	}{
		{name: "utf8", rdns: []testdn.RDNSET{
			testdn.One(testdn.C, testdn.Printable("DE")), testdn.One(testdn.O, testdn.UTF8("Acme, Inc.")),
			testdn.Multi(testdn.ATV{Type: testdn.OU, Value: testdn.UTF8("R+D")}, testdn.ATV{Type: testdn.OU, Value: testdn.UTF8("Ops")}),
			testdn.One(testdn.CN, testdn.UTF8("Zoë Müller 日本")), testdn.One(testdn.EmailAddress, testdn.IA5("zoe@example.com")),
		}, emails: []string{"zoe.mueller@example.com"}},
		{name: "specials", rdns: []testdn.RDNSET{
			testdn.One(testdn.O, testdn.UTF8(`100% \ sure`)), testdn.One(testdn.OU, testdn.UTF8("#hash")), testdn.One(testdn.OU, testdn.UTF8("x#")),
			testdn.One(testdn.CN, testdn.UTF8(`a,b+c"d\e<f>g;h=i`)),
		}},
		{name: "spaces", rdns: []testdn.RDNSET{
			testdn.One(testdn.O, testdn.UTF8("  both  ")), testdn.One(testdn.OU, testdn.UTF8(" lead")), testdn.One(testdn.CN, testdn.UTF8("trail ")),
		}},
		{name: "lone", rdns: []testdn.RDNSET{
			testdn.One(testdn.O, testdn.UTF8("%")), testdn.One(testdn.OU, testdn.UTF8(" ")), testdn.One(testdn.CN, testdn.UTF8("#")),
		}},
		{name: "multi-valued", rdns: []testdn.RDNSET{
			testdn.One(testdn.OID("0.9.2342.19200300.100.1.25"), testdn.IA5("com")), testdn.One(testdn.OID("0.9.2342.19200300.100.1.25"), testdn.IA5("example")),
			testdn.One(testdn.OU, testdn.UTF8("Dev")), testdn.One(testdn.OU, testdn.UTF8("Ops")), testdn.One(testdn.OU, testdn.UTF8("QA")),
			testdn.Multi(testdn.ATV{Type: testdn.CN, Value: testdn.UTF8("bob")}, testdn.ATV{Type: testdn.OID("0.9.2342.19200300.100.1.1"), Value: testdn.UTF8("bob")},
				testdn.ATV{Type: testdn.OID("0.9.2342.19200300.100.1.3"), Value: testdn.IA5("bob@example.com")}),
		}},
		{name: "known-oids", rdns: []testdn.RDNSET{
			testdn.One(testdn.OID("1.3.6.1.4.1.311.60.2.1.3"), testdn.Printable("DE")), testdn.One(testdn.OID("2.5.4.15"), testdn.UTF8("Private Organization")),
			testdn.One(testdn.OID("2.5.4.97"), testdn.UTF8("VATDE-123456789")), testdn.One(testdn.OID("2.5.4.9"), testdn.UTF8("Hauptstr. 1")),
			testdn.One(testdn.OID("2.5.4.17"), testdn.UTF8("10115")), testdn.One(testdn.OID("2.5.4.12"), testdn.UTF8("Dr.")),
			testdn.One(testdn.OID("2.5.4.72"), testdn.UTF8("admin")), testdn.One(testdn.OID("2.5.4.4"), testdn.UTF8("Müller")), testdn.One(testdn.OID("2.5.4.42"), testdn.UTF8("Zoë")),
			testdn.One(testdn.OID("2.5.4.65"), testdn.UTF8("zm")), testdn.One(testdn.OID("2.5.4.46"), testdn.Printable("q1")), testdn.One(testdn.OID("2.5.4.13"), testdn.UTF8("a test")),
			testdn.One(testdn.OID("2.5.4.5"), testdn.Printable("12345")), testdn.One(testdn.OID("0.9.2342.19200300.100.1.3"), testdn.IA5("zoe@example.com")),
			testdn.One(testdn.CN, testdn.UTF8("zoe")),
		}},
		{name: "unknown-oids", rdns: []testdn.RDNSET{
			testdn.One(testdn.Unknown, testdn.UTF8("abc")), testdn.One(testdn.OID("1.3.6.1.4.1.99999.7"), testdn.Printable("x y")),
			testdn.One(testdn.CN, testdn.UTF8("carol")),
		}},
		{name: "string-types", rdns: []testdn.RDNSET{
			testdn.One(testdn.O, testdn.T61("Soci\xe9t\xe9")), testdn.One(testdn.CN, testdn.BMP("Ωmega")),
		}},
		{name: "controls", rdns: []testdn.RDNSET{
			testdn.One(testdn.OU, testdn.UTF8("new\nline")), testdn.One(testdn.CN, testdn.UTF8("tab\there\x01")),
		}},
	}
}

// echoServer answers every request with its headers as JSON.
func echoServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(r.Header)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// lookPath finds program in $PATH or the sbin directories, or fails the
// test naming the Debian package.
func lookPath(t *testing.T, program, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(program); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p := filepath.Join(dir, program); fileExists(p) {
			return p
		}
	}
	t.Fatalf("%s is required: install the Debian package %s", program, pkg)
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// lockedBuffer collects a server's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runServer starts a server in the foreground, in its own process group
// killed when the test ends, and waits (bounded) until it accepts on addr.
func runServer(t *testing.T, addr, name string, args ...string) {
	t.Helper()
	out := &lockedBuffer{}
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s did not exit after SIGKILL", name)
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			t.Fatalf("%s exited before accepting connections:\n%s", name, out)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not accept connections on %s:\n%s", name, addr, out)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func writeTestFile(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// modSSLVars are the mod_ssl variables of the apache profile's headers.
var modSSLVars = map[string]string{
	"X-Ssl-Client-S-Dn": "SSL_CLIENT_S_DN", "X-Ssl-Client-S-Dn-Cn": "SSL_CLIENT_S_DN_CN",
	"X-Ssl-Client-S-Dn-Email": "SSL_CLIENT_S_DN_Email", "X-Ssl-Client-S-Dn-O": "SSL_CLIENT_S_DN_O",
	"X-Ssl-Client-S-Dn-Ou": "SSL_CLIENT_S_DN_OU", "X-Ssl-Client-I-Dn": "SSL_CLIENT_I_DN",
	"X-Ssl-Client-M-Serial": "SSL_CLIENT_M_SERIAL", "X-Ssl-Client-V-Start": "SSL_CLIENT_V_START",
	"X-Ssl-Client-V-End": "SSL_CLIENT_V_END", "X-Ssl-Client-Verify": "SSL_CLIENT_VERIFY",
	"X-Ssl-Client-Cert": "SSL_CLIENT_CERT",
}

// nginxVars are the nginx variables of the nginx profile's headers.
var nginxVars = map[string]string{
	"X-Ssl-Client-S-Dn": "$ssl_client_s_dn", "X-Ssl-Client-Serial": "$ssl_client_serial",
	"X-Ssl-Client-Fingerprint": "$ssl_client_fingerprint", "X-Ssl-Client-Escaped-Cert": "$ssl_client_escaped_cert",
	"X-Ssl-Client-Verify": "$ssl_client_verify",
}

// startApache runs Apache 2.4 with mod_ssl in front of upstream, setting
// each header of the apache profile from its mod_ssl variable when that is
// not empty (without the condition mod_headers sends "(null)").
func startApache(t *testing.T, dir, caFile, certFile, keyFile, upstream string, names []string) string {
	apache := lookPath(t, "apache2", "apache2")
	addr := freeAddr(t)
	var b strings.Builder
	fmt.Fprintf(&b, "ServerRoot %s\nServerName localhost\nPidFile %[1]s/apache2.pid\n", dir)
	fmt.Fprintf(&b, "DefaultRuntimeDir %s\nErrorLog %[1]s/error.log\nLogLevel warn\n", dir)
	for _, m := range []string{"mpm_event", "authz_core", "socache_shmcb", "ssl", "headers", "proxy", "proxy_http"} {
		fmt.Fprintf(&b, "LoadModule %s_module /usr/lib/apache2/modules/mod_%[1]s.so\n", m)
	}
	if os.Geteuid() == 0 {
		// Apache refuses to serve as root.
		b.WriteString("User www-data\nGroup www-data\n")
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Fprintf(&b, "StartServers 1\nSSLSessionCache none\nListen %s\n<VirtualHost %[1]s>\n", addr)
	fmt.Fprintf(&b, "SSLEngine on\nSSLCertificateFile %s\nSSLCertificateKeyFile %s\n", certFile, keyFile)
	fmt.Fprintf(&b, "SSLCACertificateFile %s\nSSLVerifyClient require\nSSLVerifyDepth 1\n", caFile)
	for _, n := range names {
		v := modSSLVars[n]
		if v == "" {
			t.Fatalf("no mod_ssl variable for %s", n)
		}
		fmt.Fprintf(&b, "RequestHeader set %s \"%%{%s}s\" \"expr=-n %%{%[2]s}\"\n", n, v)
	}
	fmt.Fprintf(&b, "ProxyRequests off\nProxyPass / %s/\n</VirtualHost>\n", upstream)
	conf := writeTestFile(t, filepath.Join(dir, "apache2.conf"), []byte(b.String()))
	runServer(t, addr, apache, "-f", conf, "-DFOREGROUND")
	return addr
}

// startNginx runs nginx in front of upstream, setting each header of the
// nginx profile from its variable (nginx leaves out an empty one).
func startNginx(t *testing.T, dir, caFile, certFile, keyFile, upstream string, names []string) string {
	nginx := lookPath(t, "nginx", "nginx")
	addr := freeAddr(t)
	var b strings.Builder
	fmt.Fprintf(&b, "daemon off;\nworker_processes 1;\npid %s/nginx.pid;\nerror_log stderr notice;\n", dir)
	b.WriteString("events { worker_connections 64; }\nhttp {\naccess_log off;\n")
	for _, p := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&b, "%s_temp_path %s/%[1]s;\n", p, dir)
	}
	fmt.Fprintf(&b, "server {\nlisten %s ssl;\nssl_certificate %s;\nssl_certificate_key %s;\n", addr, certFile, keyFile)
	fmt.Fprintf(&b, "ssl_client_certificate %s;\nssl_verify_client on;\nssl_verify_depth 1;\n", caFile)
	fmt.Fprintf(&b, "location / {\nproxy_pass %s;\n", upstream)
	for _, n := range names {
		v := nginxVars[n]
		if v == "" {
			t.Fatalf("no nginx variable for %s", n)
		}
		fmt.Fprintf(&b, "proxy_set_header %s %s;\n", n, v)
	}
	b.WriteString("}\n}\n}\n")
	conf := writeTestFile(t, filepath.Join(dir, "nginx.conf"), []byte(b.String()))
	runServer(t, addr, nginx, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", conf)
	return addr
}

// fetchHeaders gets https://addr/ presenting cert and returns the headers
// the echo upstream received.
func fetchHeaders(t *testing.T, addr string, ca *x509.Certificate, cert *x509.Certificate, key crypto.Signer) http.Header {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	tr := &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, ServerName: "localhost",
		Certificates: []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}},
	}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := c.Get("https://" + addr + "/")
	if err != nil {
		t.Fatalf("GET https://%s/: %v", addr, err)
	}
	defer resp.Body.Close()
	var h http.Header
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET https://%s/: %s", addr, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatalf("GET https://%s/: the upstream's echo: %v", addr, err)
	}
	return h
}

// TestProfilesMatchServers sends clients with tricky subjects through the
// real Apache 2.4 and nginx and through minica's proxy with the apache and
// nginx profiles, all in front of one echo upstream, and compares what the
// upstream receives header by header.
func TestProfilesMatchServers(t *testing.T) {
	ca := testca.New(t, `Interop CA, "Test" + #1 <x>;`)
	dir := t.TempDir()
	srv, srvKey := ca.Server(t, "localhost")
	srvKeyDER, err := x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile := writeTestFile(t, filepath.Join(dir, "ca.pem"), ca.PEM())
	certFile := writeTestFile(t, filepath.Join(dir, "server.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Raw}))
	keyFile := writeTestFile(t, filepath.Join(dir, "server.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: srvKeyDER}))
	upstream := echoServer(t)

	type client struct {
		name string
		cert *x509.Certificate
		key  crypto.Signer
	}
	var clients []client
	for _, s := range trickySubjects() {
		cert, key := ca.Leaf(t, &x509.Certificate{
			RawSubject: testdn.Name(t, s.rdns...), EmailAddresses: s.emails,
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		})
		clients = append(clients, client{s.name, cert, key})
	}

	servers := []struct {
		name, profile      string
		start              func(t *testing.T, dir, caFile, certFile, keyFile, upstream string, names []string) string
		identical, compare int
	}{
		{"apache", identity.ProfileApache, startApache, apacheIdentical, apacheCompared},
		{"nginx", identity.ProfileNginx, startNginx, nginxIdentical, nginxCompared},
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "proxy.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range servers {
		h, err := identity.NewHeaders(s.profile, nil)
		if err != nil {
			t.Fatal(err)
		}
		names := h.Names()
		peer := s.start(t, t.TempDir(), caFile, certFile, keyFile, upstream, names)
		ours := startMinica(t, ca, srv, srvKey, upstream, s.profile)
		identical, compared := 0, 0
		var table strings.Builder
		for _, c := range clients {
			theirs, mine := fetchHeaders(t, peer, ca.Cert, c.cert, c.key), fetchHeaders(t, ours, ca.Cert, c.cert, c.key)
			for _, n := range names {
				a, m := strings.Join(theirs.Values(n), "\n"), strings.Join(mine.Values(n), "\n")
				if a == "" && m == "" {
					continue
				}
				compared++
				key := s.name + " " + c.name + " " + n
				if a == m {
					identical++
					continue
				}
				seen[key] = true
				reason, ok := knownDifferences[key]
				fmt.Fprintf(&table, "%s (%s)\n\t%-7s %q\n\tminica  %q\n", key, reason, s.name, a, m)
				if !ok {
					t.Errorf("%s: %s sends %q, minica %q: not a known difference", key, s.name, a, m)
				}
			}
		}
		t.Logf("%s: %d of %d headers identical; the differences:\n%s", s.name, identical, compared, table.String())
		if identical < s.identical || compared != s.compare {
			t.Errorf("%s: %d of %d headers identical; docs/proxy.md says %d of %d", s.name, identical, compared, s.identical, s.compare)
		}
		if stated := fmt.Sprintf("`%s`: %d of %d headers identical", s.name, s.identical, s.compare); !bytes.Contains(doc, []byte(stated)) {
			t.Errorf("docs/proxy.md does not say %q", stated)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(knownDifferences)) {
		if !seen[k] {
			t.Errorf("%s: listed as a known difference, but the values are identical now", k)
		}
	}
}

// startMinica runs minica's proxy with profile in front of upstream, with
// an empty CRL of ca, and returns its address.
func startMinica(t *testing.T, ca *testca.CA, srv *x509.Certificate, srvKey crypto.Signer, upstream, profile string) string {
	t.Helper()
	now := time.Now()
	crl, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number: big.NewInt(1), ThisUpdate: now.Add(-time.Minute), NextUpdate: now.Add(time.Hour),
	}, ca.Cert, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) {
		c.Upstream = upstream
		c.Profile = profile
		c.LoadCA = func() ([]*x509.Certificate, error) { return []*x509.Certificate{ca.Cert}, nil }
		c.CRL = crlFunc(func() ([]byte, error) { return crl, nil })
		c.LoadCert = func() (tls.Certificate, error) {
			return tls.Certificate{Certificate: [][]byte{srv.Raw}, PrivateKey: srvKey, Leaf: srv}, nil
		}
	})
	return e.addr
}
