package formats_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"minica/formats"
)

func TestDetectTestdata(t *testing.T) {
	tests := []struct {
		file     string
		wantKind formats.Kind
		want     string
	}{
		{"ca.pem", formats.KindCertificate, "PEM certificate"},
		{"server.der", formats.KindCertificate, "DER certificate"},
		{"chain.pem", formats.KindCertificate, "PEM certificate chain (2 certificates)"},
		{"ed25519.pem", formats.KindCertificate, "PEM certificate"},
		{"bundle.pem", formats.KindBundle, "PEM bundle: PKCS#8 private key (ECDSA P-256) and 2 certificates"},
		{"server-key.pem", formats.KindPrivateKey, "PEM PKCS#8 private key (ECDSA P-256)"},
		{"server-key.der", formats.KindPrivateKey, "DER PKCS#8 private key (ECDSA P-256)"},
		{"server-key-sec1.pem", formats.KindPrivateKey, "PEM SEC1 private key (ECDSA P-256)"},
		{"server-key-sec1.der", formats.KindPrivateKey, "DER SEC1 private key (ECDSA P-256)"},
		{"server-key-enc.pem", formats.KindPrivateKey, "PEM encrypted PKCS#8 private key"},
		{"server-key-enc.der", formats.KindPrivateKey, "DER encrypted PKCS#8 private key"},
		{"client-rsa-key-pkcs1.pem", formats.KindPrivateKey, "PEM PKCS#1 private key (RSA 2048)"},
		{"client-rsa-key-pkcs1.der", formats.KindPrivateKey, "DER PKCS#1 private key (RSA 2048)"},
		{"client-rsa-key-legacy.pem", formats.KindPrivateKey, "PEM legacy encrypted PEM private key"},
		{"ed25519-key.pem", formats.KindPrivateKey, "PEM PKCS#8 private key (Ed25519)"},
		{"server-pub.pem", formats.KindPublicKey, "PEM public key (ECDSA P-256)"},
		{"server-pub.der", formats.KindPublicKey, "DER public key (ECDSA P-256)"},
		{"rsa-pub-pkcs1.pem", formats.KindPublicKey, "PEM public key (RSA 2048)"},
		{"server-csr.pem", formats.KindCSR, "PEM certificate request"},
		{"server-csr.der", formats.KindCSR, "DER certificate request"},
		{"crl.pem", formats.KindCRL, "PEM CRL (2 entries)"},
		{"crl.der", formats.KindCRL, "DER CRL (2 entries)"},
		{"modern.p12", formats.KindPKCS12, "PKCS#12 bundle"},
		{"compat.p12", formats.KindPKCS12, "PKCS#12 bundle"},
		{"nss.p12", formats.KindPKCS12, "PKCS#12 bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			obj, err := formats.Detect(readTestdata(t, tt.file))
			if err != nil {
				t.Fatalf("Detect() error = %v", err)
			}
			if obj.Kind != tt.wantKind || obj.String() != tt.want {
				t.Errorf("Detect() = %v, %q; want %v, %q", obj.Kind, obj.String(), tt.wantKind, tt.want)
			}
		})
	}
}

func TestDetectErrors(t *testing.T) {
	cert := readTestdata(t, "server.pem")
	der := readTestdata(t, "server.der")
	tests := []struct {
		name    string
		input   []byte
		wantIs  error
		wantErr string
	}{
		{"nil", nil, formats.ErrEmpty, "empty input"},
		{"whitespace", []byte(" \n\t\r\n"), formats.ErrEmpty, "empty input"},
		{"PEM without END", cert[:len(cert)/2], formats.ErrTruncated,
			`truncated input: PEM block "CERTIFICATE" has no END line`},
		{"PEM with bad base64", []byte("-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n"), formats.ErrMalformed,
			`malformed input: PEM block "CERTIFICATE" is not valid base64`},
		{"second PEM block truncated", append(append([]byte{}, cert...), cert[:100]...), formats.ErrTruncated,
			`truncated input: PEM block "CERTIFICATE" has no END line`},
		{"truncated DER", der[:200], formats.ErrTruncated,
			"truncated input: DER structure announces " + itoa(len(der)) + " bytes, only 200 present"},
		{"truncated DER inside PEM", pemOf("CERTIFICATE", der[:300]), formats.ErrTruncated,
			"parsing certificate: truncated input: DER structure announces " + itoa(len(der)) + " bytes, only 300 present"},
		{"trailing data after DER", append(append([]byte{}, der...), 0, 0, 0), formats.ErrMalformed,
			"malformed input: 3 bytes of trailing data after the DER structure"},
		{"BER without end-of-contents", []byte{0x30, 0x80, 0x02, 0x01, 0x00}, formats.ErrTruncated,
			"truncated input: BER element without end-of-contents"},
		{"BER of unknown shape", []byte{0x30, 0x80, 0x02, 0x01, 0x00, 0x00, 0x00}, formats.ErrUnknownFormat,
			"unknown format: a DER SEQUENCE that is not a certificate, request, CRL, key or PKCS#12 bundle"},
		{"BER primitive with indefinite length", []byte{0x30, 0x80, 0x02, 0x80, 0x00, 0x00}, formats.ErrMalformed,
			"malformed input: invalid DER length header"},
		{"bad length header", []byte{0x30, 0x85, 0x01, 0x01, 0x01, 0x01, 0x01}, formats.ErrMalformed,
			"malformed input: invalid DER length header"},
		{"unknown DER sequence", []byte{0x30, 0x03, 0x01, 0x01, 0xff}, formats.ErrUnknownFormat,
			"unknown format: a DER SEQUENCE that is not a certificate, request, CRL, key or PKCS#12 bundle"},
		{"damaged certificate", damage(der), formats.ErrMalformed, "malformed input: parsing certificate: x509:"},
		{"gzip", []byte{0x1f, 0x8b, 0x08, 0x00, 0x01}, formats.ErrUnknownFormat, "unknown format: gzip data"},
		{"zip", []byte("PK\x03\x04rest"), formats.ErrUnknownFormat, "unknown format: a zip archive"},
		{"ssh public key", []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 simon@host\n"), formats.ErrUnknownFormat,
			"unknown format: an OpenSSH public key"},
		{"binary", []byte{0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09}, formats.ErrUnknownFormat,
			"unknown format: binary data starting with 00 01 02 03 04 05 06 07"},
		{"text", []byte("hello, this is not a certificate at all\nsecond line"), formats.ErrUnknownFormat,
			`unknown format: text starting with "hello, this is not a cer..."`},
		{"base64 without armor", []byte("MIIBszCCAVmgAwIBAgIQX5wKGyw9Tl9gcYKTpLXG1zAKBggqhkjOPQQDAjAz\n"), formats.ErrUnknownFormat,
			"unknown format: base64 text without PEM armor (are the BEGIN and END lines missing?)"},
		{"unsupported PEM block", pemOf("OPENSSH PRIVATE KEY", []byte{1, 2, 3}), formats.ErrUnknownFormat,
			`unknown format: unsupported PEM block "OPENSSH PRIVATE KEY"`},
		{"PEM mixing CSR and CRL", append(readTestdata(t, "server-csr.pem"), readTestdata(t, "crl.pem")...), formats.ErrUnknownFormat,
			"unknown format: PEM mixes a certificate request and a CRL"},
		{"PEM with two keys", append(readTestdata(t, "server-key.pem"), readTestdata(t, "ed25519-key.pem")...), formats.ErrUnknownFormat,
			"unknown format: PEM holds more than one private key"},
		{"PEM with only EC parameters", pemOf("EC PARAMETERS", []byte{6, 8, 42, 134, 72, 206, 61, 3, 1, 7}), formats.ErrUnknownFormat,
			"unknown format: PEM holds no certificate, request, CRL or key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := formats.Detect(tt.input)
			if err == nil {
				t.Fatalf("Detect() = %v; want error %q", obj, tt.wantErr)
			}
			if !errors.Is(err, tt.wantIs) || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("Detect() error = %q; want %v starting with %q", err, tt.wantIs, tt.wantErr)
			}
		})
	}
}

// TestDetectSkipsECParameters reads what openssl ecparam -genkey writes:
// the curve block, then the key.
func TestDetectSkipsECParameters(t *testing.T) {
	params := pemOf("EC PARAMETERS", []byte{6, 8, 42, 134, 72, 206, 61, 3, 1, 7})
	obj, err := formats.Detect(append(params, readTestdata(t, "server-key-sec1.pem")...))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := obj.String(), "PEM SEC1 private key (ECDSA P-256)"; got != want {
		t.Errorf("Detect() = %q; want %q", got, want)
	}
}

// TestDetectIgnoresTextAround reads PEM with openssl's "Bag Attributes"
// lines before the block and text after it.
func TestDetectIgnoresTextAround(t *testing.T) {
	in := "Bag Attributes\n    localKeyID: 01 02\nsubject=CN=www.example.com\n" +
		string(readTestdata(t, "server.pem")) + "trailing words\n"
	obj, err := formats.Detect([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if obj.Kind != formats.KindCertificate || len(obj.Certificates) != 1 {
		t.Errorf("Detect() = %v; want one certificate", obj)
	}
}

// damage flips a byte inside the certificate's signature algorithm so the
// outline stays intact but the parse fails.
func damage(der []byte) []byte {
	out := bytes.Clone(der)
	i := bytes.Index(out, []byte{0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02})
	out[i] = 0x05
	return out
}

func TestDetectPKCS1PublicKeyDER(t *testing.T) {
	pemObj, err := formats.Detect(readTestdata(t, "rsa-pub-pkcs1.pem"))
	if err != nil {
		t.Fatal(err)
	}
	der, err := formats.Reencode(pemObj, formats.DER)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := formats.Detect(der)
	if err != nil {
		t.Fatal(err)
	}
	if obj.String() != "DER public key (RSA 2048)" || obj.PublicKey.Format != formats.PKCS1 {
		t.Errorf("Detect() = %q in %v; want a DER PKCS#1 RSA 2048 public key", obj, obj.PublicKey.Format)
	}
	back, err := formats.Reencode(obj, formats.PEM)
	if err != nil || !bytes.Equal(back, readTestdata(t, "rsa-pub-pkcs1.pem")) {
		t.Errorf("DER back to PEM = %s, %v; want the original", back, err)
	}
}
