package proxy

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"minica/identity"
	"minica/internal/testca"
)

// writePEMs writes the test CA and a client certificate and key as PEM
// files for curl and openssl, and returns their paths.
func writePEMs(t *testing.T, e *env) (caFile, certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	cert, key := e.ca.Client(t, "alice")
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	caFile, certFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "alice.pem"), filepath.Join(dir, "alice.key")
	for path, block := range map[string]*pem.Block{
		caFile:   {Type: "CERTIFICATE", Bytes: e.ca.Cert.Raw},
		certFile: {Type: "CERTIFICATE", Bytes: cert.Raw},
		keyFile:  {Type: "PRIVATE KEY", Bytes: der},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return caFile, certFile, keyFile
}

// TestCurl runs the real curl (it must be installed) with and without a
// client certificate, over HTTP/1.1 and HTTP/2.
func TestCurl(t *testing.T) {
	e := newEnv(t, nil)
	caFile, certFile, keyFile := writePEMs(t, e)
	_, port, _ := net.SplitHostPort(e.addr)
	base := []string{"--silent", "--show-error", "--max-time", "10", "--cacert", caFile,
		"--resolve", "localhost:" + port + ":127.0.0.1", "https://localhost:" + port + "/"}
	for _, proto := range []string{"--http1.1", "--http2"} {
		out, err := exec.Command("curl", append([]string{proto, "--cert", certFile, "--key", keyFile, "-w", " %{http_version}"}, base...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %s with a certificate: %v\n%s", proto, err, out)
		}
		want := "hello from upstream 1.1"
		if proto == "--http2" {
			want = "hello from upstream 2"
		}
		if string(out) != want {
			t.Errorf("curl %s: got %q; want %q", proto, out, want)
		}
	}
	out, err := exec.Command("curl", base...).CombinedOutput()
	if err == nil {
		t.Errorf("curl without a certificate succeeded: %s", out)
	}
	e.waitLog("handshake-refused", "reason=no-certificate")
}

// TestOpenSSLProtocols checks with the real openssl s_client that TLS 1.1
// and non-AEAD suites are refused, and TLS 1.2 with an AEAD suite works.
func TestOpenSSLProtocols(t *testing.T) {
	e := newEnv(t, nil)
	caFile, certFile, keyFile := writePEMs(t, e)
	run := func(args ...string) (string, error) {
		cmd := exec.Command("openssl", append([]string{"s_client", "-connect", e.addr, "-CAfile", caFile,
			"-cert", certFile, "-key", keyFile, "-servername", "localhost"}, args...)...)
		cmd.Stdin = strings.NewReader("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256", "-ign_eof")
	if err != nil || !strings.Contains(out, "hello from upstream") {
		t.Fatalf("TLS 1.2 AEAD: %v\n%s", err, out)
	}
	// SECLEVEL=0 lets openssl itself offer TLS 1.1 and CBC suites, so
	// the refusal comes from the proxy's alert.
	refused := []struct {
		name  string
		args  []string
		alert string
	}{
		{"TLS 1.1", []string{"-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"}, "alert protocol version"},
		{"TLS 1.2 CBC", []string{"-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA:@SECLEVEL=0"}, "alert handshake failure"},
	}
	for _, r := range refused {
		out, err := run(r.args...)
		if err == nil || !strings.Contains(out, r.alert) || strings.Contains(out, "hello from upstream") {
			t.Errorf("%s: exit %v; want refused with %q:\n%s", r.name, err, r.alert, out)
		}
	}
}

// TestCurlOtherCA checks that curl, which sends its certificate whatever CA
// names the server lists, gets the unknown_ca alert for a certificate of
// another CA.
func TestCurlOtherCA(t *testing.T) {
	e := newEnv(t, nil)
	caFile, _, _ := writePEMs(t, e)
	cert, key := testca.New(t, "Other CA").Client(t, "alice")
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "other.pem"), filepath.Join(dir, "other.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(e.addr)
	out, err := exec.Command("curl", "--silent", "--show-error", "--max-time", "10", "--tls-max", "1.2", "--cacert", caFile,
		"--cert", certFile, "--key", keyFile, "--resolve", "localhost:"+port+":127.0.0.1", "https://localhost:"+port+"/").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "alert unknown ca") {
		t.Errorf("curl with another CA's certificate: %v; want an unknown ca alert\n%s", err, out)
	}
	e.waitLog("handshake-refused ", "reason=unknown-ca ", "serial="+identity.SerialHex(cert.SerialNumber))
}
