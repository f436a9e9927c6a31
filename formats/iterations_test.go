package formats_test

import (
	"encoding/pem"
	"errors"
	"math/big"
	"testing"

	"minica/formats"
	"minica/internal/dertest"
)

func patchInteger(t *testing.T, der []byte, old int64, repl *big.Int, nth int) []byte {
	t.Helper()
	out, err := dertest.PatchInteger(der, old, repl, nth)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const absurd = 1<<31 - 1

func TestDecodeP12RefusesAbsurdIterations(t *testing.T) {
	fx := serverFixture(t)
	huge := new(big.Int).Lsh(big.NewInt(1), 70)
	tests := []struct {
		name    string
		profile formats.P12Profile
		count   *big.Int
		nth     int
		wantErr string
	}{
		{"certificate encryption", formats.P12Modern, big.NewInt(absurd), 1,
			"decoding PKCS#12: the PKCS#12 certificate encryption asks for 2147483647 key-derivation iterations, above minica's limit of 10000000"},
		{"key encryption", formats.P12Modern, big.NewInt(absurd), 2,
			"decoding PKCS#12: the PKCS#12 key encryption asks for 2147483647 key-derivation iterations, above minica's limit of 10000000"},
		{"MAC", formats.P12Modern, big.NewInt(absurd), 3,
			"decoding PKCS#12: the PKCS#12 MAC asks for 2147483647 key-derivation iterations, above minica's limit of 10000000"},
		{"one above the limit", formats.P12Modern, big.NewInt(formats.MaxIterations + 1), 3,
			"decoding PKCS#12: the PKCS#12 MAC asks for 10000001 key-derivation iterations, above minica's limit of 10000000"},
		{"beyond 64 bits", formats.P12Modern, huge, 3,
			"decoding PKCS#12: the PKCS#12 MAC asks for more than 9223372036854775807 key-derivation iterations, above minica's limit of 10000000"},
		{"compat, PKCS#12 KDF", formats.P12Compat, big.NewInt(absurd), 0,
			"decoding PKCS#12: the PKCS#12 certificate encryption asks for 2147483647 key-derivation iterations, above minica's limit of 10000000"},
		{"compat MAC", formats.P12Compat, big.NewInt(absurd), 3,
			"decoding PKCS#12: the PKCS#12 MAC asks for 2147483647 key-derivation iterations, above minica's limit of 10000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			good, err := formats.P12Encoder{Profile: tt.profile, Iterations: 1234}.Encode(fx.key, fx.leaf, fx.chain, "pw")
			if err != nil {
				t.Fatal(err)
			}
			if _, _, _, err := formats.DecodeP12(good, "pw"); err != nil {
				t.Fatalf("DecodeP12() of the unpatched bundle = %v", err)
			}
			bad := patchInteger(t, good, 1234, tt.count, tt.nth)
			_, _, _, err = formats.DecodeP12(bad, "pw")
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("DecodeP12() error = %v; want %q", err, tt.wantErr)
			}
			if !errors.Is(err, formats.ErrTooManyIterations) {
				t.Errorf("DecodeP12() error does not match ErrTooManyIterations")
			}
		})
	}
}

func TestDecryptRefusesAbsurdIterations(t *testing.T) {
	fx := serverFixture(t)
	good, err := formats.EncodePrivateKey(fx.key, formats.PKCS8, formats.DER, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		count   int64
		wantErr string
	}{
		{"2^31-1", absurd,
			"decrypting private key: the encrypted private key asks for 2147483647 key-derivation iterations, above minica's limit of 10000000"},
		{"one above the limit", formats.MaxIterations + 1,
			"decrypting private key: the encrypted private key asks for 10000001 key-derivation iterations, above minica's limit of 10000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// go.step.sm/crypto writes 600,000 iterations.
			bad := patchInteger(t, good, 600000, big.NewInt(tt.count), 0)
			for _, data := range [][]byte{bad, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: bad})} {
				_, err := formats.ParsePrivateKey(data, []byte("pw"))
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParsePrivateKey() error = %v; want %q", err, tt.wantErr)
				}
				if !errors.Is(err, formats.ErrTooManyIterations) {
					t.Errorf("ParsePrivateKey() error does not match ErrTooManyIterations")
				}
			}
		})
	}
	if _, err := formats.ParsePrivateKey(good, []byte("pw")); err != nil {
		t.Errorf("ParsePrivateKey() of the unpatched key = %v", err)
	}
}
