//go:build interop

package browsertest

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"minica/formats"
)

// newNSSHome returns a fresh home directory whose .pki/nssdb (the database
// Chromium reads on Linux) trusts caCert for TLS servers and holds the key
// and certificate of the .p12 at p12, opened with the password in pwFile.
// pk12util names the key after the certificate's CN, which must be cn.
func newNSSHome(t *testing.T, caCert, p12, pwFile, cn string) string {
	t.Helper()
	home := t.TempDir()
	db := filepath.Join(home, ".pki", "nssdb")
	if err := os.MkdirAll(db, 0o700); err != nil {
		t.Fatal(err)
	}
	sqlDB := "sql:" + db
	run(t, nil, "certutil", "-N", "-d", sqlDB, "--empty-password")
	run(t, nil, "certutil", "-A", "-d", sqlDB, "-n", "minica test CA", "-t", "C,,", "-i", caCert)
	run(t, nil, "pk12util", "-i", p12, "-d", sqlDB, "-w", pwFile)
	keys := run(t, nil, "certutil", "-K", "-d", sqlDB)
	if !strings.Contains(keys, " "+cn+"\n") {
		t.Fatalf("certutil -K lists no key after pk12util -i %s:\n%s", p12, keys)
	}
	return home
}

// newTrustingHome returns a home directory whose NSS database trusts caCert
// for TLS servers and holds no key.
func newTrustingHome(t *testing.T, caCert string) string {
	t.Helper()
	home := t.TempDir()
	db := filepath.Join(home, ".pki", "nssdb")
	if err := os.MkdirAll(db, 0o700); err != nil {
		t.Fatal(err)
	}
	run(t, nil, "certutil", "-N", "-d", "sql:"+db, "--empty-password")
	run(t, nil, "certutil", "-A", "-d", "sql:"+db, "-n", "minica test CA", "-t", "C,,", "-i", caCert)
	return home
}

// bundle is a .p12 a browser downloaded, saved for the tools: the .p12
// and its password file (for pk12util), and its certificate and key in
// PEM (for the test's own requests through the proxy).
type bundle struct {
	p12, pwFile string
	id          issued
	leaf        *x509.Certificate
}

// saveBundle opens the .p12 data with password, failing the test if it
// does not open, and writes it into dir as name.p12, name.pw, name.crt and
// name.key (keys and secrets 0600).
func saveBundle(t *testing.T, dir, name string, data []byte, password string) bundle {
	t.Helper()
	key, leaf, _, err := formats.DecodeP12(data, password)
	if err != nil {
		t.Fatalf("the downloaded .p12 does not open with the chosen password: %v", err)
	}
	keyPEM, err := formats.MarshalPrivateKeyPEM(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := func(ext string) string { return filepath.Join(dir, name+ext) }
	b := bundle{p12: path(".p12"), pwFile: path(".pw"), id: issued{Cert: path(".crt"), Key: path(".key")}, leaf: leaf}
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{b.p12, data, 0o600},
		{b.pwFile, []byte(password), 0o600},
		{b.id.Key, keyPEM, 0o600},
		{b.id.Cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw}), 0o644},
	} {
		if err := os.WriteFile(f.path, f.data, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	return b
}
