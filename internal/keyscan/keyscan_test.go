package keyscan

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScanFinds plants a key in each form Scan must see and checks that it
// reports it, and that clean files and allowed keys give no finding.
func TestScanFinds(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(ec)
	sec1, _ := x509.MarshalECPrivateKey(ec)
	otherPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: must(x509.MarshalPKCS8PrivateKey(other))})
	ecdhKey, err := ec.ECDH()
	if err != nil {
		t.Fatal(err)
	}
	scalar := ecdhKey.Bytes()
	filler := []byte(strings.Repeat("x", 100))
	tests := []struct {
		name  string
		data  []byte
		pub   any
		allow bool
		want  string // "" for no finding
	}{
		{"clean", filler, &ec.PublicKey, false, ""},
		{"pem pkcs8", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), &ec.PublicKey, false, `a PEM "PRIVATE KEY" block`},
		{"der inside other bytes", append(append(append([]byte{}, filler...), sec1...), filler...), &ec.PublicKey, false, "the CA's private key, as DER"},
		{"raw scalar", append(append(append([]byte{}, filler...), scalar...), filler...), &ec.PublicKey, false, "raw ECDSA private scalar"},
		{"raw scalar in a pem block", pem.EncodeToMemory(&pem.Block{Type: "DATA", Bytes: scalar}), &ec.PublicKey, false, "raw ECDSA private scalar"},
		{"rsa prime", append(append([]byte{}, filler...), rk.Primes[1].Bytes()...), &rk.PublicKey, false, "prime factor"},
		{"another key, allowed", otherPEM, &ec.PublicKey, true, ""},
		{"another key, not allowed", otherPEM, &ec.PublicKey, false, `a PEM "PRIVATE KEY" block`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "f")
			if err := os.WriteFile(file, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			found, _, err := Scan([]string{dir}, tt.pub, func(string) bool { return tt.allow })
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if len(found) != 0 {
					t.Fatalf("Scan() = %v; want nothing", found)
				}
				return
			}
			if len(found) == 0 || !strings.Contains(found[0].What, tt.want) {
				t.Fatalf("Scan() = %v; want a finding containing %q", found, tt.want)
			}
		})
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
