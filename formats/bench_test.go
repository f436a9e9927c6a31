package formats_test

import (
	"testing"
	"time"

	"minica/formats"
)

func BenchmarkDetect(b *testing.B) {
	for _, file := range []string{"chain.pem", "server.der", "crl.der", "server-key.pem", "modern.p12"} {
		data := readTestdata(b, file)
		b.Run(file, func(b *testing.B) {
			for b.Loop() {
				if _, err := formats.Detect(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDescribe(b *testing.B) {
	data := readTestdata(b, "chain.pem")
	now := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		if _, err := formats.Describe(data, nil, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkP12 measures a bundle's encode and decode with each profile's
// default iteration count (2048), the cost `minica export p12` pays.
func BenchmarkP12(b *testing.B) {
	obj, err := formats.Detect(readTestdata(b, "bundle.pem"))
	if err != nil {
		b.Fatal(err)
	}
	key, leaf, chain := obj.Key.Signer, obj.Certificates[0], obj.Certificates[1:]
	for _, p := range []formats.P12Profile{formats.P12Modern, formats.P12Compat} {
		data, err := formats.EncodeP12(p, key, leaf, chain, "pw")
		if err != nil {
			b.Fatal(err)
		}
		b.Run("encode/"+p.String(), func(b *testing.B) {
			for b.Loop() {
				if _, err := formats.EncodeP12(p, key, leaf, chain, "pw"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("decode/"+p.String(), func(b *testing.B) {
			for b.Loop() {
				if _, _, _, err := formats.DecodeP12(data, "pw"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
