//go:build interop

package formats_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/internal/testca"
)

// The interop tests run real peers on files this package writes. They are
// behind the interop build tag; a missing tool fails the test and names the
// Debian package to install.

// tools maps each peer binary to the Debian package that provides it.
var tools = map[string]string{
	"openssl":  "openssl",
	"pk12util": "libnss3-tools",
	"certutil": "libnss3-tools",
	"java":     "default-jdk-headless",
	"keytool":  "default-jdk-headless",
	"certtool": "gnutls-bin",
	"curl":     "curl",
}

func requireTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s not found: install the Debian package %s (apt-get install -y %s)", name, tools[name], tools[name])
	}
}

// run executes a peer with a bounded time and returns its combined output;
// a non-zero exit fails the test with that output.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := runErr(t, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func runErr(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	requireTool(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// interopIdentity is a client certificate, its key and the CA chain.
type interopIdentity struct {
	name  string
	key   crypto.Signer
	leaf  *x509.Certificate
	chain []*x509.Certificate
}

// clientIdentities issues an ECDSA P-256 and an RSA-2048 client
// certificate under ca.
func clientIdentities(t *testing.T, ca *testca.CA) []interopIdentity {
	t.Helper()
	ecLeaf, ecKey := ca.Client(t, "ec-client")
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: testca.RandomSerial(t),
		Subject:      pkix.Name{CommonName: "rsa-client"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, rsaKey.Public(), ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	rsaLeaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	chain := []*x509.Certificate{ca.Cert}
	return []interopIdentity{
		{"ECDSA-P256", ecKey, ecLeaf, chain},
		{"RSA-2048", rsaKey, rsaLeaf, chain},
	}
}
