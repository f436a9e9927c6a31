package formats_test

import (
	"bytes"
	"errors"
	"testing"

	"minica/formats"
)

func TestParseByKind(t *testing.T) {
	if certs, err := formats.ParseCertificates(readTestdata(t, "chain.pem")); err != nil || len(certs) != 2 {
		t.Errorf("ParseCertificates(chain.pem) = %d certificates, %v; want 2", len(certs), err)
	}
	if certs, err := formats.ParseCertificates(readTestdata(t, "bundle.pem")); err != nil || len(certs) != 2 {
		t.Errorf("ParseCertificates(bundle.pem) = %d certificates, %v; want 2", len(certs), err)
	}
	if csr, err := formats.ParseCSR(readTestdata(t, "server-csr.der")); err != nil || csr.Subject.CommonName != "www.example.com" {
		t.Errorf("ParseCSR(server-csr.der) = %v, %v", csr, err)
	}
	if crl, err := formats.ParseCRL(readTestdata(t, "crl.pem")); err != nil || crl.Number.Int64() != 7 {
		t.Errorf("ParseCRL(crl.pem) = %v, %v", crl, err)
	}
	tests := []struct {
		name    string
		parse   func([]byte) error
		file    string
		wantErr string
	}{
		{"certificates from a key", func(b []byte) error { _, err := formats.ParseCertificates(b); return err },
			"server-key.pem", "expected a certificate, found a PEM PKCS#8 private key (ECDSA P-256)"},
		{"CSR from a certificate", func(b []byte) error { _, err := formats.ParseCSR(b); return err },
			"server.der", "expected a certificate request, found a DER certificate"},
		{"CRL from a bundle", func(b []byte) error { _, err := formats.ParseCRL(b); return err },
			"modern.p12", "expected a CRL, found a PKCS#12 bundle"},
		{"CSR from garbage", func(b []byte) error { _, err := formats.ParseCSR(b); return err },
			"gen.go", `unknown format: text starting with "//go:build ignore"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.parse(readTestdata(t, tt.file))
			if errString(err) != tt.wantErr {
				t.Fatalf("error = %v; want %q", err, tt.wantErr)
			}
			if tt.file != "gen.go" && !errors.Is(err, formats.ErrWrongKind) {
				t.Errorf("error %v does not match ErrWrongKind", err)
			}
		})
	}
}

func TestEncodeBundle(t *testing.T) {
	fx := serverFixture(t)
	got, err := formats.EncodeBundle(fx.key, append(fx.chain[:0:0], fx.leaf, fx.chain[0]), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := readTestdata(t, "bundle.pem"); !bytes.Equal(got, want) {
		t.Errorf("EncodeBundle() differs from testdata/bundle.pem:\n%s", got)
	}
	if _, err := formats.EncodeBundle(fx.key, nil, nil); errString(err) != "encoding certificates: no certificate given" {
		t.Errorf("EncodeBundle(no certificates) error = %v", err)
	}
}
