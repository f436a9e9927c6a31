package formats_test

import (
	"bytes"
	"strings"
	"testing"

	"minica/formats"
)

// TestReencodeRoundTrip converts every testdata input to the other
// encoding and back, and expects the original bytes.
func TestReencodeRoundTrip(t *testing.T) {
	pairs := []struct{ pem, der string }{
		{"server.pem", "server.der"},
		{"server-key.pem", "server-key.der"},
		{"server-key-sec1.pem", "server-key-sec1.der"},
		{"server-key-enc.pem", "server-key-enc.der"},
		{"client-rsa-key-pkcs1.pem", "client-rsa-key-pkcs1.der"},
		{"server-pub.pem", "server-pub.der"},
		{"server-csr.pem", "server-csr.der"},
		{"crl.pem", "crl.der"},
	}
	for _, p := range pairs {
		t.Run(p.pem, func(t *testing.T) {
			pemData, derData := readTestdata(t, p.pem), readTestdata(t, p.der)
			gotDER := reencode(t, pemData, formats.DER)
			if !bytes.Equal(gotDER, derData) {
				t.Errorf("PEM to DER differs from %s", p.der)
			}
			if gotPEM := reencode(t, gotDER, formats.PEM); !bytes.Equal(gotPEM, pemData) {
				t.Errorf("DER to PEM differs from %s:\n%s", p.pem, gotPEM)
			}
			if same := reencode(t, pemData, formats.PEM); !bytes.Equal(same, pemData) {
				t.Errorf("PEM to PEM changed %s", p.pem)
			}
		})
	}
}

func TestReencodeKeepsPEMOnlyObjects(t *testing.T) {
	for _, file := range []string{"chain.pem", "bundle.pem", "client-rsa-key-legacy.pem", "rsa-pub-pkcs1.pem"} {
		data := readTestdata(t, file)
		if got := reencode(t, data, formats.PEM); !bytes.Equal(got, data) {
			t.Errorf("Reencode(%s, PEM) changed the file:\n%s", file, got)
		}
	}
}

func TestReencodeErrors(t *testing.T) {
	tests := []struct {
		file    string
		wantErr string
	}{
		{"chain.pem", "encoding certificates: DER holds one certificate, not a chain of 2 (use PEM)"},
		{"bundle.pem", "converting a bundle: DER holds one object, not a key and certificates (use PEM)"},
		{"client-rsa-key-legacy.pem", "converting a legacy encrypted PEM key: it has no DER form (decrypt it first)"},
		{"modern.p12", "converting a PKCS#12 bundle: decode it with its password first"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			obj, err := formats.Detect(readTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := formats.Reencode(obj, formats.DER); errString(err) != tt.wantErr {
				t.Fatalf("Reencode() error = %v; want %q", err, tt.wantErr)
			}
		})
	}
}

// TestKeyFormatRoundTrip converts PKCS#1/SEC1 to PKCS#8 and back; the bytes
// come back identical.
func TestKeyFormatRoundTrip(t *testing.T) {
	tests := []struct {
		file   string
		native formats.KeyFormat
	}{
		{"server-key-sec1.der", formats.SEC1},
		{"client-rsa-key-pkcs1.der", formats.PKCS1},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			orig := readTestdata(t, tt.file)
			key, err := formats.ParsePrivateKey(orig, nil)
			if err != nil {
				t.Fatal(err)
			}
			p8, err := formats.EncodePrivateKey(key, formats.PKCS8, formats.DER, nil)
			if err != nil {
				t.Fatal(err)
			}
			key8, err := formats.ParsePrivateKey(p8, nil)
			if err != nil {
				t.Fatal(err)
			}
			back, err := formats.EncodePrivateKey(key8, tt.native, formats.DER, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, orig) {
				t.Errorf("%s -> PKCS#8 -> %s changed the bytes", tt.native, tt.native)
			}
		})
	}
}

// TestEncryptDecryptRoundTrip encrypts a plain key and decrypts it again.
func TestEncryptDecryptRoundTrip(t *testing.T) {
	plain := readTestdata(t, "server-key.pem")
	key, err := formats.ParsePrivateKey(plain, nil)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := formats.EncodePrivateKey(key, formats.PKCS8, formats.PEM, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(enc), "-----BEGIN ENCRYPTED PRIVATE KEY-----\n") {
		t.Fatalf("encrypted key is not an ENCRYPTED PRIVATE KEY block:\n%s", enc)
	}
	dec, err := formats.ParsePrivateKey(enc, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	back, err := formats.EncodePrivateKey(dec, formats.PKCS8, formats.PEM, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, plain) {
		t.Errorf("decrypted key differs from the original:\n%s", back)
	}
}

func TestParseEnums(t *testing.T) {
	if e, err := formats.ParseEncoding("DER"); e != formats.DER || err != nil {
		t.Errorf(`ParseEncoding("DER") = %v, %v`, e, err)
	}
	if _, err := formats.ParseEncoding("p12"); errString(err) != `unknown encoding "p12" (want pem or der)` {
		t.Errorf(`ParseEncoding("p12") error = %v`, err)
	}
	if f, err := formats.ParseKeyFormat("Sec1"); f != formats.SEC1 || err != nil {
		t.Errorf(`ParseKeyFormat("Sec1") = %v, %v`, f, err)
	}
	if _, err := formats.ParseKeyFormat("jwk"); errString(err) != `unknown key format "jwk" (want pkcs8, sec1 or pkcs1)` {
		t.Errorf(`ParseKeyFormat("jwk") error = %v`, err)
	}
}

func reencode(t *testing.T, data []byte, enc formats.Encoding) []byte {
	t.Helper()
	obj, err := formats.Detect(data)
	if err != nil {
		t.Fatal(err)
	}
	out, err := formats.Reencode(obj, enc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
