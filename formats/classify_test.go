package formats

import (
	"math/big"
	"testing"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// seq builds a DER SEQUENCE whose contents are written by f.
func seq(f func(b *cryptobyte.Builder)) []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, f)
	return b.BytesOrPanic()
}

func algID(b *cryptobyte.Builder) {
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { b.AddASN1ObjectIdentifier([]int{1, 2, 3}) })
}

func name(b *cryptobyte.Builder) {
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SET, func(b *cryptobyte.Builder) {})
	})
}

// TestClassifyDER covers the outlines the testdata files do not: v1
// certificates and CRLs, which Go cannot write, and edge cases.
func TestClassifyDER(t *testing.T) {
	signed := func(tbs func(b *cryptobyte.Builder)) []byte {
		return seq(func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.SEQUENCE, tbs)
			algID(b)
			b.AddASN1BitString([]byte{0})
		})
	}
	tests := []struct {
		name string
		der  []byte
		want derShape
	}{
		{"v1 certificate", signed(func(b *cryptobyte.Builder) {
			b.AddASN1Int64(5)
			algID(b)
			name(b)
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {})
		}), shapeCertificate},
		{"v1 CRL", signed(func(b *cryptobyte.Builder) {
			algID(b)
			name(b)
			b.AddASN1(cbasn1.UTCTime, func(b *cryptobyte.Builder) { b.AddBytes([]byte("270101000000Z")) })
		}), shapeCRL},
		{"v2 CRL", signed(func(b *cryptobyte.Builder) {
			b.AddASN1Int64(1)
			algID(b)
			name(b)
			b.AddASN1(cbasn1.GeneralizedTime, func(b *cryptobyte.Builder) { b.AddBytes([]byte("20270101000000Z")) })
		}), shapeCRL},
		{"CSR with empty subject", signed(func(b *cryptobyte.Builder) {
			b.AddASN1Int64(0)
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {})
		}), shapeCSR},
		{"signed structure of unknown shape", signed(func(b *cryptobyte.Builder) {
			b.AddASN1Int64(0)
			algID(b)
			name(b)
			b.AddASN1Boolean(true)
		}), shapeUnknown},
		{"PKCS#1 public key, small modulus", seq(func(b *cryptobyte.Builder) {
			b.AddASN1Int64(0x7fffffff)
			b.AddASN1Int64(65537)
		}), shapePKCS1Public},
		{"PKCS#1 public key, 2048-bit modulus", seq(func(b *cryptobyte.Builder) {
			b.AddASN1BigInt(new(big.Int).Lsh(big.NewInt(1), 2047))
			b.AddASN1Int64(65537)
		}), shapePKCS1Public},
		{"three integers", seq(func(b *cryptobyte.Builder) {
			b.AddASN1Int64(7)
			b.AddASN1Int64(8)
			b.AddASN1Int64(9)
		}), shapeUnknown},
		{"version 3 without data content", seq(func(b *cryptobyte.Builder) {
			b.AddASN1Int64(3)
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { b.AddASN1ObjectIdentifier([]int{1, 2, 840, 113549, 1, 7, 2}) })
		}), shapeUnknown},
		{"algorithm then integer", seq(func(b *cryptobyte.Builder) {
			algID(b)
			b.AddASN1Int64(1)
		}), shapeUnknown},
		{"not a sequence", []byte{0x02, 0x01, 0x00}, shapeUnknown},
		{"empty sequence", []byte{0x30, 0x00}, shapeUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classifyDER(tt.der); got != tt.want {
				t.Errorf("classifyDER() = %v; want %v", got, tt.want)
			}
		})
	}
}
