package formats_test

import (
	"crypto/x509"
	"errors"
	"strings"
	"testing"

	pkcs12 "software.sslmate.com/src/go-pkcs12"

	"minica/formats"
)

type p12Fixture struct {
	key   privateKey
	leaf  *x509.Certificate
	chain []*x509.Certificate
}

func serverFixture(t *testing.T) p12Fixture {
	t.Helper()
	obj, err := formats.Detect(readTestdata(t, "bundle.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return p12Fixture{obj.Key.Signer.(privateKey), obj.Certificates[0], obj.Certificates[1:]}
}

func rsaFixture(t *testing.T) p12Fixture {
	t.Helper()
	leaf, err := formats.Detect(readTestdata(t, "client-rsa.pem"))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := formats.Detect(readTestdata(t, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return p12Fixture{testKey(t, "client-rsa-key-pkcs1.pem"), leaf.Certificates[0], ca.Certificates}
}

func TestP12RoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		fx      p12Fixture
		profile formats.P12Profile
		want    string // the protection Describe reports
	}{
		{"modern ECDSA", serverFixture(t), formats.P12Modern, "PBES2 AES-256-CBC, SHA-256 MAC"},
		{"compat ECDSA", serverFixture(t), formats.P12Compat, "pbeWithSHAAnd3-KeyTripleDES-CBC, SHA-1 MAC"},
		{"modern RSA", rsaFixture(t), formats.P12Modern, "PBES2 AES-256-CBC, SHA-256 MAC"},
		{"compat RSA", rsaFixture(t), formats.P12Compat, "pbeWithSHAAnd3-KeyTripleDES-CBC, SHA-1 MAC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc := formats.P12Encoder{Profile: tt.profile, Iterations: 10}
			data, err := enc.Encode(tt.fx.key, tt.fx.leaf, tt.fx.chain, "pw-123")
			if err != nil {
				t.Fatal(err)
			}
			if err := formats.CheckP12(data, "pw-123", tt.fx.key, tt.fx.leaf); err != nil {
				t.Fatalf("CheckP12() = %v", err)
			}
			key, leaf, chain, err := formats.DecodeP12(data, "pw-123")
			if err != nil {
				t.Fatal(err)
			}
			if !tt.fx.key.Equal(key) || !leaf.Equal(tt.fx.leaf) || len(chain) != 1 || !chain[0].Equal(tt.fx.chain[0]) {
				t.Errorf("DecodeP12() did not return the key, leaf and chain encoded")
			}
			info, err := formats.P12EncryptionInfo(data)
			if err != nil {
				t.Fatal(err)
			}
			if info.String() != tt.want || info.Iterations != 10 {
				t.Errorf("P12EncryptionInfo() = %q, %d iterations; want %q, 10", info, info.Iterations, tt.want)
			}
		})
	}
}

// TestEncodeP12DefaultIterations checks that the profiles keep go-pkcs12's
// iteration counts when the caller sets none.
func TestEncodeP12DefaultIterations(t *testing.T) {
	fx := serverFixture(t)
	tests := []struct {
		profile           formats.P12Profile
		iterations, macIt int
	}{
		{formats.P12Modern, 2048, 2048},
		{formats.P12Compat, 2048, 1},
	}
	for _, tt := range tests {
		data, err := formats.EncodeP12(tt.profile, fx.key, fx.leaf, fx.chain, "pw")
		if err != nil {
			t.Fatal(err)
		}
		info, err := formats.P12EncryptionInfo(data)
		if err != nil {
			t.Fatal(err)
		}
		if info.Iterations != tt.iterations || info.MACIterations != tt.macIt {
			t.Errorf("%v: %d and %d MAC iterations; want %d and %d", tt.profile, info.Iterations, info.MACIterations, tt.iterations, tt.macIt)
		}
	}
}

func TestEncodeP12Errors(t *testing.T) {
	fx := serverFixture(t)
	other := rsaFixture(t)
	tests := []struct {
		name     string
		enc      formats.P12Encoder
		key      privateKey
		leaf     *x509.Certificate
		password string
		wantIs   error
		wantErr  string
	}{
		{"empty password", formats.P12Encoder{}, fx.key, fx.leaf, "", formats.ErrBadP12Password,
			"unusable PKCS#12 password: the password must not be empty"},
		{"non-ASCII password", formats.P12Encoder{}, fx.key, fx.leaf, "pässword", formats.ErrBadP12Password,
			"unusable PKCS#12 password: the password must be ASCII (Java cannot read PKCS#12 files with non-ASCII passwords)"},
		{"control character", formats.P12Encoder{}, fx.key, fx.leaf, "pass\nword", formats.ErrBadP12Password,
			"unusable PKCS#12 password: the password must not hold control characters"},
		{"key mismatch", formats.P12Encoder{}, other.key, fx.leaf, "pw", formats.ErrKeyMismatch,
			"encoding PKCS#12: private key does not match the certificate"},
		{"no leaf", formats.P12Encoder{}, fx.key, nil, "pw", nil, "encoding PKCS#12: no certificate given"},
		{"unknown profile", formats.P12Encoder{Profile: 7}, fx.key, fx.leaf, "pw", nil, "encoding PKCS#12: unknown profile 7"},
		{"negative iterations", formats.P12Encoder{Iterations: -1}, fx.key, fx.leaf, "pw", nil,
			"encoding PKCS#12: negative iteration count -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.enc.Encode(tt.key, tt.leaf, fx.chain, tt.password)
			if errString(err) != tt.wantErr || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
				t.Fatalf("Encode() error = %v; want %q", err, tt.wantErr)
			}
		})
	}
}

func TestDecodeP12Errors(t *testing.T) {
	p12 := readTestdata(t, "compat.p12")
	tests := []struct {
		name     string
		input    []byte
		password string
		wantIs   error
		wantErr  string
	}{
		{"wrong password", p12, "nope", formats.ErrWrongPassword, "wrong password"},
		{"empty password", readTestdata(t, "modern.p12"), "", formats.ErrWrongPassword, "wrong password"},
		{"empty input", nil, "pw", formats.ErrEmpty, "empty input"},
		{"truncated", p12[:len(p12)-10], "pw", formats.ErrTruncated, "decoding PKCS#12: truncated input: DER structure announces"},
		{"a certificate", readTestdata(t, "server.der"), "pw", formats.ErrMalformed, "decoding PKCS#12: malformed input: not a PKCS#12 structure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, _, err := formats.DecodeP12(tt.input, tt.password)
			if !errors.Is(err, tt.wantIs) || !strings.HasPrefix(errString(err), tt.wantErr) {
				t.Fatalf("DecodeP12() error = %v; want %v starting with %q", err, tt.wantIs, tt.wantErr)
			}
		})
	}
}

// TestDecodeP12BER reads a bundle exported by NSS's pk12util (as Firefox
// exports them): BER with indefinite lengths and chunked OCTET STRINGs. Its
// algorithms are readable; decoding it is refused with a specific error.
func TestDecodeP12BER(t *testing.T) {
	data := readTestdata(t, "nss.p12")
	info, err := formats.P12EncryptionInfo(data)
	if err != nil {
		t.Fatal(err)
	}
	if info.MAC == "" || info.CertEncryption == "" || info.KeyEncryption == "" {
		t.Errorf("P12EncryptionInfo(nss.p12) = %+v; want all algorithms named", info)
	}
	_, _, _, err = formats.DecodeP12(data, testPassword)
	want := "decoding PKCS#12: unsupported input: the bundle is BER-encoded, as NSS and Firefox export them (re-export it with openssl pkcs12)"
	if !errors.Is(err, formats.ErrUnsupported) || errString(err) != want {
		t.Errorf("DecodeP12(nss.p12) error = %v; want %q", err, want)
	}
	if _, _, _, err := formats.DecodeP12(data[:len(data)-40], testPassword); !errors.Is(err, formats.ErrTruncated) {
		t.Errorf("DecodeP12(truncated nss.p12) error = %v; want ErrTruncated", err)
	}
	// Detect hands the bundle on as it was, so `minica convert` gets the
	// same answer rather than a parse error on normalized bytes.
	obj, err := formats.Detect(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := formats.DecodeP12(obj.PKCS12, testPassword); errString(err) != want {
		t.Errorf("DecodeP12(Detect(nss.p12).PKCS12) error = %v; want %q", err, want)
	}
}

func TestCheckP12Mismatch(t *testing.T) {
	fx, other := serverFixture(t), rsaFixture(t)
	data := readTestdata(t, "modern.p12")
	tests := []struct {
		name     string
		password string
		key      privateKey
		leaf     *x509.Certificate
		wantErr  string
	}{
		{"other key", testPassword, other.key, fx.leaf, "checking PKCS#12: the bundle's private key is not the one given"},
		{"other leaf", testPassword, fx.key, other.leaf, "checking PKCS#12: the bundle's certificate is not the one given"},
		{"wrong password", "x", fx.key, fx.leaf, "checking PKCS#12: wrong password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := formats.CheckP12(data, tt.password, tt.key, tt.leaf); errString(err) != tt.wantErr {
				t.Fatalf("CheckP12() = %v; want %q", err, tt.wantErr)
			}
		})
	}
	if err := formats.CheckP12(data, testPassword, fx.key, fx.leaf); err != nil {
		t.Errorf("CheckP12() on the matching key and leaf = %v", err)
	}
}

func TestParseP12Profile(t *testing.T) {
	tests := []struct {
		in      string
		want    formats.P12Profile
		wantErr string
	}{
		{"modern", formats.P12Modern, "<nil>"},
		{"MODERN", formats.P12Modern, "<nil>"},
		{"Compat", formats.P12Compat, "<nil>"},
		{"legacy", 0, `unknown PKCS#12 profile "legacy" (want modern or compat)`},
		{"", 0, `unknown PKCS#12 profile "" (want modern or compat)`},
	}
	for _, tt := range tests {
		got, err := formats.ParseP12Profile(tt.in)
		if got != tt.want || errString(err) != tt.wantErr {
			t.Errorf("ParseP12Profile(%q) = %v, %v; want %v, %s", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err == nil && !strings.EqualFold(got.String(), tt.in) {
			t.Errorf("%v.String() = %q; want %q in any case", got, got.String(), tt.in)
		}
	}
}

func TestGeneratePassword(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		pw, err := formats.GeneratePassword()
		if err != nil {
			t.Fatal(err)
		}
		if len(pw) < 20 {
			t.Errorf("GeneratePassword() = %q; want at least 20 characters", pw)
		}
		if err := formats.CheckP12Password(pw); err != nil {
			t.Errorf("CheckP12Password(%q) = %v", pw, err)
		}
		if seen[pw] {
			t.Errorf("GeneratePassword() repeated %q", pw)
		}
		seen[pw] = true
		// A person copies it from a screen or a sheet of paper: no
		// character that looks like another.
		if i := strings.IndexAny(pw, "0O1lIo"); i >= 0 {
			t.Errorf("GeneratePassword() = %q; holds the look-alike %q", pw, pw[i])
		}
	}
}

// TestDecodeP12FindsLeafByKey builds a bundle whose first certificate is
// the CA, as some tools write them; DecodeP12 still returns the leaf.
func TestDecodeP12FindsLeafByKey(t *testing.T) {
	fx := serverFixture(t)
	// go-pkcs12 writes its "certificate" argument first.
	data, err := pkcs12.Modern2023.WithIterations(1).Encode(fx.key, fx.chain[0], []*x509.Certificate{fx.leaf}, "pw")
	if err != nil {
		t.Fatal(err)
	}
	_, leaf, chain, err := formats.DecodeP12(data, "pw")
	if err != nil {
		t.Fatal(err)
	}
	if !leaf.Equal(fx.leaf) || len(chain) != 1 || !chain[0].Equal(fx.chain[0]) {
		t.Errorf("DecodeP12() leaf = %s; want the certificate matching the key", leaf.Subject)
	}
}
