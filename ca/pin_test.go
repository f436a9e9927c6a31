package ca_test

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"minica/ca"
	"minica/formats"
	"minica/internal/testca"
)

// sum is the fingerprint of c as sha256sum prints it; fp as inspect does.
func sum(c *x509.Certificate) string {
	s := sha256.Sum256(c.Raw)
	return hex.EncodeToString(s[:])
}

func fp(c *x509.Certificate) string { return formats.FingerprintSHA256(c.Raw) }

// A bundle passes its pin when it holds the pinned CA and nothing beside
// it but CAs issued under it; anything else is refused naming both
// fingerprints.
func TestCheckPinned(t *testing.T) {
	root := testca.NewRoot(t, "Pin Root")
	inter := root.Intermediate(t, "Pin Issuing CA")
	other := testca.NewRoot(t, "Pin Intruder")
	tests := []struct {
		name    string
		certs   []*x509.Certificate
		pin     string
		wantErr string // "" for a pass
	}{
		{name: "the CA", certs: []*x509.Certificate{root.Cert}, pin: sum(root.Cert)},
		{name: "root and its intermediate", certs: []*x509.Certificate{inter.Cert, root.Cert}, pin: sum(root.Cert)},
		{name: "another CA", certs: []*x509.Certificate{other.Cert}, pin: sum(root.Cert),
			wantErr: `the CA certificate is not the one pinned: "CN=Pin Intruder" has SHA-256 fingerprint ` + fp(other.Cert) + `; the pin is ` + fp(root.Cert)},
		{name: "another CA beside the pinned one", certs: []*x509.Certificate{root.Cert, other.Cert}, pin: sum(root.Cert),
			wantErr: `the CA certificate is not the one pinned: "CN=Pin Intruder" (SHA-256 fingerprint ` + fp(other.Cert) + `) is not issued under the pinned CA ` + fp(root.Cert)},
		{name: "the root, pinned by its intermediate", certs: []*x509.Certificate{inter.Cert, root.Cert}, pin: sum(inter.Cert),
			wantErr: `"CN=Pin Root" (SHA-256 fingerprint ` + fp(root.Cert) + `) is not issued under the pinned CA ` + fp(inter.Cert)},
		{name: "empty", pin: sum(root.Cert), wantErr: "no CA certificate; the pin is " + fp(root.Cert)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pin, err := ca.ParseFingerprint(tt.pin)
			if err != nil {
				t.Fatal(err)
			}
			err = ca.CheckPinned(tt.certs, pin)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckPinned() = %v; want nil", err)
				}
				return
			}
			if !errors.Is(err, ca.ErrCAPinMismatch) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CheckPinned() = %v; want ErrCAPinMismatch containing %q", err, tt.wantErr)
			}
		})
	}
}

// A fingerprint is read as inspect and openssl print it, and as sha256sum
// prints it; anything else is refused.
func TestParseFingerprint(t *testing.T) {
	root := testca.NewRoot(t, "Pin Root")
	want := sum(root.Cert)
	colons := fp(root.Cert)
	for _, s := range []string{want, strings.ToUpper(want), colons, "sha256:" + want, "SHA256:" + colons, " " + want + "\n"} {
		got, err := ca.ParseFingerprint(s)
		if err != nil || hex.EncodeToString(got) != want {
			t.Errorf("ParseFingerprint(%q) = %x, %v; want %s", s, got, err, want)
		}
	}
	for _, s := range []string{"", want[:62], want + "00", "sha1:" + want, strings.Replace(want, want[:1], "g", 1)} {
		if _, err := ca.ParseFingerprint(s); err == nil || !strings.Contains(err.Error(), "want the SHA-256 fingerprint of the CA certificate: 64 hex digits") {
			t.Errorf("ParseFingerprint(%q) error = %v; want the expected form", s, err)
		}
	}
}
