//go:build interop

package servertest

import (
	"crypto/tls"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"minica/ca"
)

// testClassicHeaders runs fe with a configuration that keeps the header
// names of the classic hand-written recipe (--headers none plus --header
// NAME=FIELD), and then renews the server certificate: re-issued and
// reloaded, the server serves the new serial from the same configuration,
// through the stable certs/web/current.* paths.
func testClassicHeaders(t *testing.T, fe frontEnd) {
	curl := need(t, "curl", "curl")
	p := newPKI(t)
	up := newUpstream(t)
	port := freePort(t)
	dir := t.TempDir()
	conf := minica(t, p.dir, "config", fe.name, "--server-cert", "web", "--upstream", up.url, "--listen", "127.0.0.1:"+port,
		"--headers", "none", "--header", "X_SSL_CLIENT_DN_Email=dn_email", "--header", "X_SSL_CLIENT_DN_CN=cn")
	generated := filepath.Join(dir, "generated.conf")
	if err := os.WriteFile(generated, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	s := fe.start(t, dir, generated, port)

	r := get(t, curl, p.caFile, port, p.alice, "X_SSL_CLIENT_DN_CN: mallory", "X-SSL-CLIENT-DN-CN: mallory")
	if !r.ok || r.status != "200" {
		t.Fatalf("alice: got status %q (%s); want 200\n%s", r.status, r.detail, s.output())
	}
	for h, want := range map[string]string{"X_SSL_CLIENT_DN_CN": "alice", "X_SSL_CLIENT_DN_Email": "alice@example.com"} {
		if got := r.headers.Values(h); len(got) != 1 || got[0] != want {
			t.Errorf("upstream got %s %q; want %q (all: %v)", h, got, want, r.headers)
		}
	}
	for _, h := range []string{"X-Ssl-Client-Cn", "X-Ssl-Client-Dn-Cn"} {
		if got := r.headers.Values(h); len(got) != 0 {
			t.Errorf("upstream got %s %q; want none", h, got)
		}
	}

	before := servedSerial(t, port, p.alice)
	var renewed struct{ Serial string }
	if err := json.Unmarshal([]byte(minica(t, p.dir, "issue", "server", "web", "--dns", "localhost", "--ip", "127.0.0.1", "--force", "--json")), &renewed); err != nil {
		t.Fatal(err)
	}
	fe.reload(t, dir, s, filepath.Join(p.dir, "crl.pem"))
	deadline := time.Now().Add(waitLimit)
	for servedSerial(t, port, p.alice) != renewed.Serial {
		if time.Now().After(deadline) {
			t.Fatalf("still serving %s, not the renewed %s, %s after the reload\n%s", before, renewed.Serial, waitLimit, s.output())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r := get(t, curl, p.caFile, port, p.alice); r.status != "200" {
		t.Errorf("alice after the renewal: got status %q (%s); want 200", r.status, r.detail)
	}
}

// servedSerial is the serial of the certificate the server on port serves.
func servedSerial(t *testing.T, port string, c client) string {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(c.cert, c.key)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", "127.0.0.1:"+port, &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatalf("connecting to the server: %v", err)
	}
	defer conn.Close()
	return ca.SerialHex(conn.ConnectionState().PeerCertificates[0].SerialNumber)
}
