//go:build interop

package formats_test

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	"minica/formats"
)

// TestConvertInterop converts every testdata input to its other encoding,
// has openssl read the result, compares with openssl's own conversion, and
// converts back to the original bytes (issue point 10).
func TestConvertInterop(t *testing.T) {
	tests := []struct {
		file    string
		command []string // openssl subcommand reading the file, before -in
		pemOnly bool
	}{
		{"server.pem", []string{"x509"}, false},
		{"client-rsa.pem", []string{"x509"}, false},
		{"ed25519.pem", []string{"x509"}, false},
		{"server-csr.pem", []string{"req", "-verify"}, false},
		{"crl.pem", []string{"crl"}, false},
		{"server-key.pem", []string{"pkey"}, false},
		{"server-key-sec1.pem", []string{"ec", "-check"}, false},
		{"client-rsa-key-pkcs1.pem", []string{"rsa", "-check"}, false},
		{"server-pub.pem", []string{"pkey", "-pubin"}, false},
		{"chain.pem", []string{"x509"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			dir := t.TempDir()
			orig := readTestdata(t, tt.file)
			origPath := writeFile(t, dir, "orig.pem", orig)
			if tt.pemOnly {
				run(t, "openssl", append(tt.command, "-in", origPath, "-noout")...)
				return
			}
			der := reencode(t, orig, formats.DER)
			derPath := writeFile(t, dir, "conv.der", der)
			run(t, "openssl", append(tt.command, "-in", derPath, "-inform", "DER", "-noout")...)

			// openssl's PEM-to-DER conversion gives the same bytes.
			opensslDER := filepath.Join(dir, "openssl.der")
			convert := []string{tt.command[0]} // without -check or -verify, which write to -out
			if tt.command[0] == "pkey" && len(tt.command) > 1 {
				convert = tt.command
			}
			run(t, "openssl", append(convert, "-in", origPath, "-outform", "DER", "-out", opensslDER)...)
			want, err := os.ReadFile(opensslDER)
			if err != nil {
				t.Fatal(err)
			}
			// Keys: openssl re-encodes them (PKCS#8 for ec/rsa, with its
			// own choice of optional fields), so compare the keys; the
			// other objects are copied, so compare the bytes.
			if obj, err := formats.Detect(der); err == nil && obj.Kind == formats.KindPrivateKey {
				if !equalKeys(obj.Key.Signer, mustKey(t, want, nil)) {
					t.Errorf("openssl's DER holds another key")
				}
			} else if !bytes.Equal(der, want) {
				t.Errorf("our DER differs from openssl's")
			}
			back := reencode(t, der, formats.PEM)
			if !bytes.Equal(back, orig) {
				t.Errorf("DER back to PEM differs from the original")
			}
			run(t, "openssl", append(tt.command, "-in", writeFile(t, dir, "back.pem", back), "-noout")...)
		})
	}
}

// TestKeyConversionInterop converts keys between PKCS#1/SEC1 and PKCS#8 and
// encrypts and decrypts them, in both directions with openssl.
func TestKeyConversionInterop(t *testing.T) {
	for _, tt := range []struct {
		file   string
		native formats.KeyFormat
	}{
		{"server-key-sec1.pem", formats.SEC1},
		{"client-rsa-key-pkcs1.pem", formats.PKCS1},
	} {
		t.Run(tt.file, func(t *testing.T) {
			dir := t.TempDir()
			orig := readTestdata(t, tt.file)
			key, err := formats.ParsePrivateKey(orig, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Ours to PKCS#8: openssl reads it, and converting back gives
			// the original bytes.
			p8, err := formats.EncodePrivateKey(key, formats.PKCS8, formats.PEM, nil)
			if err != nil {
				t.Fatal(err)
			}
			p8Path := writeFile(t, dir, "key.p8.pem", p8)
			run(t, "openssl", "pkey", "-in", p8Path, "-noout")
			back, err := formats.EncodePrivateKey(mustKey(t, p8, nil), tt.native, formats.PEM, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, orig) {
				t.Errorf("PKCS#8 back to %s differs from the original", tt.native)
			}
			// openssl's PKCS#8 conversion holds the same key.
			origPath := writeFile(t, dir, "orig.pem", orig)
			opensslP8 := run(t, "openssl", "pkcs8", "-topk8", "-nocrypt", "-in", origPath)
			if !equalKeys(key, mustKey(t, []byte(opensslP8), nil)) {
				t.Errorf("openssl's PKCS#8 holds another key")
			}
			// Encrypted by us, decrypted by openssl, and the reverse.
			pwFile := writeFile(t, dir, "pw.txt", []byte("s3cret pass\n"))
			enc, err := formats.EncodePrivateKey(key, formats.PKCS8, formats.PEM, []byte("s3cret pass"))
			if err != nil {
				t.Fatal(err)
			}
			encPath := writeFile(t, dir, "enc.pem", enc)
			decrypted := run(t, "openssl", "pkey", "-in", encPath, "-passin", "file:"+pwFile)
			if !equalKeys(key, mustKey(t, []byte(decrypted), nil)) {
				t.Errorf("openssl decrypted another key")
			}
			opensslEnc := run(t, "openssl", "pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", origPath, "-passout", "file:"+pwFile)
			if !equalKeys(key, mustKey(t, []byte(opensslEnc), []byte("s3cret pass"))) {
				t.Errorf("openssl's encrypted key decrypts to another key")
			}
		})
	}
}

// TestP12FromOpenSSL decodes bundles written by OpenSSL 3 with its default
// (PBES2) and with 3DES algorithms, and converts one to PEM files that
// openssl reads.
func TestP12FromOpenSSL(t *testing.T) {
	dir := t.TempDir()
	keyPath := writeFile(t, dir, "key.pem", readTestdata(t, "server-key.pem"))
	certPath := writeFile(t, dir, "cert.pem", readTestdata(t, "server.pem"))
	caPath := writeFile(t, dir, "ca.pem", readTestdata(t, "ca.pem"))
	pwFile := writeFile(t, dir, "pw.txt", []byte("p12 pass\n"))
	fx := serverFixture(t)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"default", nil, "PBES2 AES-256-CBC, SHA-256 MAC"},
		{"3des", []string{"-certpbe", "PBE-SHA1-3DES", "-keypbe", "PBE-SHA1-3DES", "-macalg", "sha1"},
			"pbeWithSHAAnd3-KeyTripleDES-CBC, SHA-1 MAC"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, tt.name+".p12")
			run(t, "openssl", append([]string{"pkcs12", "-export", "-inkey", keyPath, "-in", certPath,
				"-certfile", caPath, "-passout", "file:" + pwFile, "-out", out}, tt.args...)...)
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if err := formats.CheckP12(data, "p12 pass", fx.key, fx.leaf); err != nil {
				t.Fatal(err)
			}
			info, err := formats.P12EncryptionInfo(data)
			if err != nil {
				t.Fatal(err)
			}
			if info.String() != tt.want {
				t.Errorf("P12EncryptionInfo() = %q; want %q", info, tt.want)
			}
			key, leaf, chain, err := formats.DecodeP12(data, "p12 pass")
			if err != nil {
				t.Fatal(err)
			}
			keyPEM, err := formats.EncodePrivateKey(key, formats.PKCS8, formats.PEM, nil)
			if err != nil {
				t.Fatal(err)
			}
			certsPEM, err := formats.EncodeCertificates(append([]*x509.Certificate{leaf}, chain...), formats.PEM)
			if err != nil {
				t.Fatal(err)
			}
			run(t, "openssl", "pkey", "-in", writeFile(t, dir, tt.name+"-key.pem", keyPEM), "-noout")
			certsPath := writeFile(t, dir, tt.name+"-certs.pem", certsPEM)
			run(t, "openssl", "verify", "-CAfile", caPath, "-attime", "1780000000", certsPath)
		})
	}
}

func mustKey(t *testing.T, data, password []byte) privateKey {
	t.Helper()
	key, err := formats.ParsePrivateKey(data, password)
	if err != nil {
		t.Fatal(err)
	}
	return key.(privateKey)
}

func equalKeys(a, b any) bool {
	return a.(privateKey).Equal(b)
}
