//go:build interop

package browsertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
