//go:build interop

package revoke_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/formats"
	"minica/revoke"
)

// openssl runs openssl in dir with a bounded time; a failure fails the test.
func openssl(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := runOpenSSL(t, dir, args...); err != nil {
		t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// runOpenSSL runs openssl in dir with a bounded time and returns its
// output and exit error; a missing openssl fails the test.
func runOpenSSL(t *testing.T, dir string, args ...string) ([]byte, error) {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl not found: install the Debian package openssl (apt-get install -y openssl)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "openssl", args...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// TestOpenSSLScopedCRLs reads CRLs that `openssl ca -gencrl` writes with an
// issuing distribution point, and a delta CRL of `openssl crl -gendelta`:
// only those that cover client certificates are accepted.
func TestOpenSSLScopedCRLs(t *testing.T) {
	dir := t.TempDir()
	openssl(t, dir, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
		"-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=OpenSSL Root", "-days", "30",
		"-addext", "keyUsage=critical,keyCertSign,cRLSign")
	data, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	certs, err := formats.ParseCertificates(data)
	if err != nil {
		t.Fatal(err)
	}
	issuer := certs[0]
	if err := os.WriteFile(filepath.Join(dir, "index.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "crlnumber"), []byte("01\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gencrl := func(t *testing.T, out, idp string) []byte {
		t.Helper()
		conf := "[ca]\ndefault_ca = myca\n[myca]\ndatabase = index.txt\ncrlnumber = crlnumber\n" +
			"default_md = sha256\ndefault_crl_days = 7\ncrl_extensions = crl_ext\n" +
			"[crl_ext]\nauthorityKeyIdentifier = keyid:always\n"
		if idp != "" {
			conf += "issuingDistributionPoint = " + idp + "\n"
		}
		conf += "[idp_dp]\nfullname = URI:http://crl.example.com/root.crl\n" +
			"[idp_user]\nonlyuser = TRUE\n[idp_ca]\nonlyCA = TRUE\n[idp_aa]\nonlyAA = TRUE\n" +
			"[idp_reasons]\nonlysomereasons = keyCompromise, CACompromise\n[idp_indirect]\nindirectCRL = TRUE\n"
		if err := os.WriteFile(filepath.Join(dir, "ca.cnf"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		openssl(t, dir, "ca", "-config", "ca.cnf", "-gencrl", "-keyfile", "ca.key", "-cert", "ca.crt", "-out", out)
		data, err := os.ReadFile(filepath.Join(dir, out))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	const incomplete = "revoke: not a complete CRL for client certificates: "
	tests := []struct {
		section string
		wantErr string
	}{
		{"idp_dp", ""},
		{"idp_user", ""},
		{"idp_ca", incomplete + "issuing distribution point has onlyContainsCACerts"},
		{"idp_aa", incomplete + "issuing distribution point has onlyContainsAttributeCerts"},
		{"idp_reasons", incomplete + "issuing distribution point has onlySomeReasons"},
		{"idp_indirect", incomplete + "issuing distribution point has indirectCRL"},
	}
	for _, tt := range tests {
		for _, critical := range []string{"critical, ", ""} {
			t.Run(critical+tt.section, func(t *testing.T) {
				data := gencrl(t, "crl.pem", critical+"@"+tt.section)
				_, err := revoke.ParseCRL(data, issuer)
				switch {
				case tt.wantErr == "" && err != nil:
					t.Fatalf("ParseCRL() error = %v; want nil", err)
				case tt.wantErr != "" && (!errors.Is(err, revoke.ErrIncomplete) || err.Error() != tt.wantErr):
					t.Fatalf("ParseCRL() error = %v; want %q", err, tt.wantErr)
				}
				if err := revoke.CheckSignature(data, issuer); err != nil {
					t.Errorf("CheckSignature() error = %v; want nil", err)
				}
			})
		}
	}
	t.Run("delta", func(t *testing.T) {
		base := gencrl(t, "base.pem", "")
		gencrl(t, "next.pem", "")
		openssl(t, dir, "crl", "-in", "base.pem", "-gendelta", "next.pem", "-key", "ca.key", "-sha256", "-out", "delta.pem")
		if _, err := revoke.ParseCRL(base, issuer); err != nil {
			t.Fatalf("ParseCRL(base) error = %v", err)
		}
		delta, err := os.ReadFile(filepath.Join(dir, "delta.pem"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = revoke.ParseCRL(delta, issuer)
		if !errors.Is(err, revoke.ErrIncomplete) || !strings.HasPrefix(err.Error(), incomplete+"delta CRL (deltaCRLIndicator, base CRL ") {
			t.Fatalf("ParseCRL(delta) error = %v; want a delta CRL refused", err)
		}
	})
}
