package formats_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"strings"
	"testing"

	"minica/formats"
)

type privateKey interface {
	crypto.Signer
	Equal(crypto.PrivateKey) bool
}

func testKey(t *testing.T, file string) privateKey {
	t.Helper()
	key, err := formats.ParsePrivateKey(readTestdata(t, file), nil)
	if err != nil {
		t.Fatal(err)
	}
	return key.(privateKey)
}

func TestParsePrivateKeyAllFormats(t *testing.T) {
	ec := testKey(t, "server-key.pem")
	rsaKey := testKey(t, "client-rsa-key-pkcs1.pem")
	tests := []struct {
		file     string
		password string
		want     privateKey
	}{
		{"server-key.der", "", ec},
		{"server-key-sec1.pem", "", ec},
		{"server-key-sec1.der", "", ec},
		{"server-key-enc.pem", testPassword, ec},
		{"server-key-enc.der", testPassword, ec},
		{"bundle.pem", "", ec},
		{"modern.p12", testPassword, ec},
		{"client-rsa-key-pkcs1.der", "", rsaKey},
		{"client-rsa-key-legacy.pem", testPassword, rsaKey},
		{"compat.p12", testPassword, rsaKey},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := formats.ParsePrivateKey(readTestdata(t, tt.file), []byte(tt.password))
			if err != nil {
				t.Fatalf("ParsePrivateKey() error = %v", err)
			}
			if !tt.want.Equal(got) {
				t.Errorf("ParsePrivateKey() returned a different key")
			}
		})
	}
}

func TestParsePrivateKeyErrors(t *testing.T) {
	tests := []struct {
		name     string
		input    []byte
		password string
		wantIs   error
		wantErr  string
	}{
		{"certificate", readTestdata(t, "server.pem"), "", formats.ErrWrongKind,
			"expected a private key, found a PEM certificate"},
		{"DER certificate", readTestdata(t, "server.der"), "", formats.ErrWrongKind,
			"expected a private key, found a DER certificate"},
		{"chain", readTestdata(t, "chain.pem"), "", formats.ErrWrongKind,
			"expected a private key, found a PEM certificate chain (2 certificates)"},
		{"public key", readTestdata(t, "server-pub.pem"), "", formats.ErrWrongKind,
			"expected a private key, found a PEM public key (ECDSA P-256)"},
		{"CSR", readTestdata(t, "server-csr.der"), "", formats.ErrWrongKind,
			"expected a private key, found a DER certificate request"},
		{"encrypted without password", readTestdata(t, "server-key-enc.pem"), "", formats.ErrPasswordRequired,
			"the key is encrypted and no password was given"},
		{"encrypted, wrong password", readTestdata(t, "server-key-enc.der"), "wrong", formats.ErrWrongPassword,
			"wrong password"},
		{"legacy, wrong password", readTestdata(t, "client-rsa-key-legacy.pem"), "wrong", formats.ErrWrongPassword,
			"wrong password"},
		{"p12, wrong password", readTestdata(t, "modern.p12"), "wrong", formats.ErrWrongPassword,
			"wrong password"},
		{"truncated key", readTestdata(t, "server-key.der")[:40], "", formats.ErrTruncated,
			"truncated input: DER structure announces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := formats.ParsePrivateKey(tt.input, []byte(tt.password))
			if !errors.Is(err, tt.wantIs) || !strings.HasPrefix(errString(err), tt.wantErr) {
				t.Fatalf("ParsePrivateKey() error = %v; want %v starting with %q", err, tt.wantIs, tt.wantErr)
			}
		})
	}
}

func TestParsePrivateKeyPEM(t *testing.T) {
	ec := testKey(t, "server-key.pem")
	for _, file := range []string{"server-key.pem", "server-key-sec1.pem", "server-key-enc.pem", "bundle.pem"} {
		got, err := formats.ParsePrivateKeyPEM(readTestdata(t, file), []byte(testPassword))
		if err != nil || !ec.Equal(got) {
			t.Errorf("ParsePrivateKeyPEM(%s) = %v, %v; want the server key", file, got, err)
		}
	}
	tests := []struct {
		name     string
		input    []byte
		password string
		wantIs   error
		wantErr  string
	}{
		{"no PEM", readTestdata(t, "server-key.der"), "", nil, "no PEM block found"},
		{"certificate", readTestdata(t, "server.pem"), "", nil, `PEM block is "CERTIFICATE", not a private key`},
		{"no password", readTestdata(t, "server-key-enc.pem"), "", formats.ErrPasswordRequired, "the key is encrypted and no password was given"},
		{"wrong password", readTestdata(t, "server-key-enc.pem"), "x", formats.ErrWrongPassword, "wrong password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := formats.ParsePrivateKeyPEM(tt.input, []byte(tt.password))
			if errString(err) != tt.wantErr || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
				t.Fatalf("ParsePrivateKeyPEM() error = %v; want %q", err, tt.wantErr)
			}
		})
	}
}

// TestMarshalPrivateKeyPEMRoundTrip covers the encoding the ca package uses
// for its keys, encrypted and not, for each key type.
func TestMarshalPrivateKeyPEMRoundTrip(t *testing.T) {
	keys := map[string]privateKey{
		"ECDSA": testKey(t, "server-key.pem"),
		"RSA":   testKey(t, "client-rsa-key-pkcs1.pem"),
		"Ed25519": func() privateKey {
			_, k, _ := ed25519.GenerateKey(rand.Reader)
			return k
		}(),
	}
	for name, key := range keys {
		for _, password := range []string{"", "s3cret"} {
			t.Run(name+"/"+password, func(t *testing.T) {
				data, err := formats.MarshalPrivateKeyPEM(key, []byte(password))
				if err != nil {
					t.Fatal(err)
				}
				wantType := "-----BEGIN PRIVATE KEY-----"
				if password != "" {
					wantType = "-----BEGIN ENCRYPTED PRIVATE KEY-----"
				}
				if !strings.HasPrefix(string(data), wantType) {
					t.Errorf("MarshalPrivateKeyPEM() starts with %q; want %q", strings.SplitN(string(data), "\n", 2)[0], wantType)
				}
				got, err := formats.ParsePrivateKeyPEM(data, []byte(password))
				if err != nil || !key.Equal(got) {
					t.Fatalf("ParsePrivateKeyPEM() = %v, %v; want the key back", got, err)
				}
			})
		}
	}
}

func TestEncodePrivateKeyFormats(t *testing.T) {
	ec := testKey(t, "server-key.pem")
	rsaKey := testKey(t, "client-rsa-key-pkcs1.pem")
	tests := []struct {
		name     string
		key      privateKey
		format   formats.KeyFormat
		enc      formats.Encoding
		want     string // Detect's description of the output
		password string
	}{
		{"EC PKCS#8 PEM", ec, formats.PKCS8, formats.PEM, "PEM PKCS#8 private key (ECDSA P-256)", ""},
		{"EC PKCS#8 DER", ec, formats.PKCS8, formats.DER, "DER PKCS#8 private key (ECDSA P-256)", ""},
		{"EC SEC1 PEM", ec, formats.SEC1, formats.PEM, "PEM SEC1 private key (ECDSA P-256)", ""},
		{"EC SEC1 DER", ec, formats.SEC1, formats.DER, "DER SEC1 private key (ECDSA P-256)", ""},
		{"RSA PKCS#1 PEM", rsaKey, formats.PKCS1, formats.PEM, "PEM PKCS#1 private key (RSA 2048)", ""},
		{"RSA PKCS#1 DER", rsaKey, formats.PKCS1, formats.DER, "DER PKCS#1 private key (RSA 2048)", ""},
		{"RSA PKCS#8 DER", rsaKey, formats.PKCS8, formats.DER, "DER PKCS#8 private key (RSA 2048)", ""},
		{"EC encrypted DER", ec, formats.PKCS8, formats.DER, "DER encrypted PKCS#8 private key", "pw"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := formats.EncodePrivateKey(tt.key, tt.format, tt.enc, []byte(tt.password))
			if err != nil {
				t.Fatal(err)
			}
			obj, err := formats.Detect(data)
			if err != nil {
				t.Fatal(err)
			}
			if obj.String() != tt.want {
				t.Errorf("Detect(EncodePrivateKey()) = %q; want %q", obj.String(), tt.want)
			}
			got, err := obj.Key.Decrypt([]byte(tt.password))
			if err != nil || !tt.key.Equal(got) {
				t.Errorf("Decrypt() = %v, %v; want the key back", got, err)
			}
		})
	}
}

func TestEncodePrivateKeyErrors(t *testing.T) {
	ec := testKey(t, "server-key.pem")
	rsaKey := testKey(t, "client-rsa-key-pkcs1.pem")
	tests := []struct {
		name     string
		key      crypto.PrivateKey
		format   formats.KeyFormat
		password string
		wantErr  string
	}{
		{"RSA as SEC1", rsaKey, formats.SEC1, "", "encoding private key: SEC1 holds only ECDSA keys, not RSA 2048"},
		{"EC as PKCS#1", ec, formats.PKCS1, "", "encoding private key: PKCS#1 holds only RSA keys, not ECDSA P-256"},
		{"encrypted SEC1", ec, formats.SEC1, "pw", "encrypting a SEC1 key: only PKCS#8 keys can be encrypted"},
		{"write legacy", ec, formats.LegacyEncrypted, "", "encoding private key: cannot write the legacy encrypted PEM format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := formats.EncodePrivateKey(tt.key, tt.format, formats.PEM, []byte(tt.password))
			if errString(err) != tt.wantErr {
				t.Fatalf("EncodePrivateKey() error = %v; want %q", err, tt.wantErr)
			}
		})
	}
}

func TestKeyMatchesCertificate(t *testing.T) {
	obj, err := formats.Detect(readTestdata(t, "chain.pem"))
	if err != nil {
		t.Fatal(err)
	}
	server, ca := obj.Certificates[0], obj.Certificates[1]
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey := testKey(t, "client-rsa-key-pkcs1.pem")
	tests := []struct {
		name    string
		key     crypto.PrivateKey
		cert    *x509.Certificate
		wantErr error
	}{
		{"matching", testKey(t, "server-key.pem"), server, nil},
		{"matching CA", testKey(t, "ca-key.pem"), ca, nil},
		{"other EC key", other, server, formats.ErrKeyMismatch},
		{"RSA key for EC cert", rsaKey, server, formats.ErrKeyMismatch},
		{"CA key for leaf", testKey(t, "ca-key.pem"), server, formats.ErrKeyMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := formats.KeyMatchesCertificate(tt.key, tt.cert)
			if err != tt.wantErr {
				t.Fatalf("KeyMatchesCertificate() = %v; want %v", err, tt.wantErr)
			}
		})
	}
	if got, want := formats.ErrKeyMismatch.Error(), "private key does not match the certificate"; got != want {
		t.Errorf("ErrKeyMismatch = %q; want %q", got, want)
	}
	var notSigner struct{}
	if err := formats.KeyMatchesCertificate(notSigner, server); errString(err) != "checking private key: unsupported key type struct {}" {
		t.Errorf("KeyMatchesCertificate(struct{}) = %v", err)
	}
}

func TestKeyType(t *testing.T) {
	rsa3072, err := rsa.GenerateKey(rand.Reader, 3072)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key  crypto.PublicKey
		want string
	}{
		{rsa3072.Public(), "RSA 3072"},
		{p384.Public(), "ECDSA P-384"},
		{pub, "Ed25519"},
		{"nonsense", "unknown key type string"},
	}
	for _, tt := range tests {
		if got := formats.KeyType(tt.key); got != tt.want {
			t.Errorf("KeyType(%T) = %q; want %q", tt.key, got, tt.want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
