package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadInputChangesNothing feeds bad input to the CLI: each case gives its
// specific message and a non-zero status, and the CA directory stays byte
// for byte the same.
func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	dir := newCADir(t)
	encDir := filepath.Join(t.TempDir(), "enc")
	files := t.TempDir()
	pw := writeFile(t, files, "pw", "right password\n")
	wrong := writeFile(t, files, "wrong", "wrong password\n")
	mustMinica(t, encDir, "init", "--cn", "Encrypted", "--password-file", pw)

	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsa1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	goodCSR := csrDER(t, ecKey, "good")
	badSig := append([]byte(nil), goodCSR...)
	badSig[len(badSig)-3] ^= 0xff
	csrPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: goodCSR})

	tests := []struct {
		name     string
		dir      string
		args     []string
		setup    func()
		wantCode int
		wantErr  string
	}{
		{"name ../x", dir, []string{"issue", "client", "../x"}, nil, 2, `invalid name "../x"`},
		{"name a/b", dir, []string{"issue", "client", "a/b"}, nil, 2, `invalid name "a/b"`},
		{"name ..", dir, []string{"issue", "client", ".."}, nil, 2, `invalid name ".."`},
		{"name .x", dir, []string{"issue", "client", ".x"}, nil, 2, `invalid name ".x"`},
		{"name of 65 characters", dir, []string{"issue", "client", strings.Repeat("n", 65)}, nil, 2, "invalid name"},
		{"name with control character", dir, []string{"issue", "client", "a\x07b"}, nil, 2, `invalid name "a\ab"`},
		{"CN with control character", dir, []string{"issue", "client", "c1", "--cn", "evil\x1b[31m"}, nil, 1, `invalid common name "evil\x1b[31m": control, bidi or other invisible characters are not allowed`},
		{"CN with bidi override", dir, []string{"issue", "client", "c2", "--cn", "admin\u202egnp"}, nil, 1, `invalid common name "admin\u202egnp"`},
		{"email with control character", dir, []string{"issue", "client", "c3", "--email", "a\x01@example.com"}, nil, 1, `invalid email "a\x01@example.com"`},
		{"email with bidi override", dir, []string{"issue", "client", "c4", "--email", "a\u202e@example.com"}, nil, 1, `invalid email "a\u202e@example.com"`},
		{"RSA-1024 CSR", dir, []string{"sign", writeBytes(t, files, "rsa1024.csr", csrDER(t, rsa1024, "weak"))}, nil, 1, "weak key: RSA 1024 bits, at least 2048 required"},
		{"DSA CSR", dir, []string{"sign", dsaCSR(t, files)}, nil, 1, "unsupported key algorithm DSA"},
		{"CSR with bad signature", dir, []string{"sign", writeBytes(t, files, "badsig.csr", badSig)}, nil, 1, "has a bad signature"},
		{"garbage CSR", dir, []string{"sign", writeFile(t, files, "garbage.csr", "garbage\x00\x01")}, nil, 1, "is not a valid CSR (PEM or DER)"},
		{"truncated PEM CSR", dir, []string{"sign", writeBytes(t, files, "trunc.csr", csrPEM[:len(csrPEM)/2])}, nil, 1, "is not a valid CSR (PEM or DER)"},
		{"truncated DER CSR", dir, []string{"sign", writeBytes(t, files, "trunc.der", goodCSR[:len(goodCSR)-10])}, nil, 1, "is not a valid CSR (PEM or DER)"},
		{"wrong password", encDir, []string{"issue", "client", "x", "--password-file", wrong}, nil, 1, "wrong password"},
		{"endless password file", encDir, []string{"issue", "client", "x", "--password-file", "/dev/zero"}, nil, 1,
			`reading password file "/dev/zero": it is longer than 4096 bytes: a password file holds one password`},
		{"CA key readable by group", dir, []string{"issue", "client", "x"},
			func() { os.Chmod(filepath.Join(dir, "ca.key"), 0o640) }, 1, "has mode 0640: group and others must have no access"},
		{"CA key readable by others", dir, []string{"issue", "client", "x"},
			func() { os.Chmod(filepath.Join(dir, "ca.key"), 0o604) }, 1, "has mode 0604"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup()
				defer os.Chmod(filepath.Join(dir, "ca.key"), 0o600)
			}
			before := dirHash(t, tt.dir)
			_, stderr, code := minica(t, tt.dir, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit status %d; want %d", code, tt.wantCode)
			}
			if !strings.HasPrefix(stderr, "minica: error: ") || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("stderr = %q; want a minica error containing %q", stderr, tt.wantErr)
			}
			if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "panic") {
				t.Errorf("stderr holds a stack trace: %s", stderr)
			}
			if dirHash(t, tt.dir) != before {
				t.Error("the CA directory changed")
			}
		})
	}
}

func csrDER(t *testing.T, key any, cn string) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// dsaCSR makes a DSA CSR with openssl; Go no longer creates DSA keys.
func dsaCSR(t *testing.T, dir string) string {
	t.Helper()
	params, key, csr := filepath.Join(dir, "dsa.params"), filepath.Join(dir, "dsa.key"), filepath.Join(dir, "dsa.csr")
	for _, args := range [][]string{
		{"dsaparam", "-out", params, "1024"},
		{"gendsa", "-out", key, params},
		{"req", "-new", "-key", key, "-subj", "/CN=dsa", "-out", csr},
	} {
		if out, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %v (Debian package openssl): %v\n%s", args, err, out)
		}
	}
	return csr
}

func writeFile(t *testing.T, dir, name, content string) string {
	return writeBytes(t, dir, name, []byte(content))
}

func writeBytes(t *testing.T, dir, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
