//go:build !cgo || nopkcs11

package ca

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestPKCS11Unsupported: a build without PKCS#11 (no cgo, or the nopkcs11
// tag: go test -tags nopkcs11 ./ca -run PKCS11) refuses a key URI with
// ErrPKCS11Unsupported and creates nothing.
func TestPKCS11Unsupported(t *testing.T) {
	if PKCS11Supported {
		t.Fatal("PKCS11Supported in a build without PKCS#11")
	}
	u, err := ParseKeyURI("pkcs11:token=minica;object=ca?module-path=/usr/lib/softhsm/libsofthsm2.so")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ca")
	_, err = Init(dir, InitOptions{CommonName: "X", KeyURI: u, PIN: []byte("1234")})
	if !errors.Is(err, ErrPKCS11Unsupported) {
		t.Fatalf("Init() error = %v; want ErrPKCS11Unsupported", err)
	}
	const want = "PKCS#11 keys need a minica built with cgo; this binary was built without cgo"
	if err.Error() != want {
		t.Fatalf("Init() error = %q; want %q", err, want)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Init created %s: %v", dir, err)
	}
}
