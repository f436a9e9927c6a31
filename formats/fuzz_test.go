package formats_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"minica/formats"
)

// addSeeds adds every input file of testdata/ to the corpus, plus
// truncated copies, so that the seed run alone covers the error paths.
func addSeeds(f *testing.F) {
	f.Helper()
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) == ".go" {
			continue
		}
		data, err := os.ReadFile(filepath.Join("testdata", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
		f.Add(data[:len(data)-1])
	}
	f.Add([]byte{})
	f.Add([]byte{0x30, 0x80})
	f.Add([]byte{0x30, 0x84, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n"))
}

// FuzzDetect checks that Detect and Describe never panic, and that every
// error matches one of the documented sentinels.
func FuzzDetect(f *testing.F) {
	addSeeds(f)
	now := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, err := formats.Detect(data)
		if err != nil {
			if !isDocumented(err) {
				t.Fatalf("Detect() error %q matches no sentinel", err)
			}
			return
		}
		_ = obj.String()
		if obj.Kind != formats.KindPKCS12 {
			for _, enc := range []formats.Encoding{formats.PEM, formats.DER} {
				_, _ = formats.Reencode(obj, enc)
			}
		}
		d, err := formats.Describe(data, nil, now)
		if err == nil {
			_ = d.WriteText(discard{})
		}
	})
}

// FuzzDecode runs the decoders that take a password over arbitrary input.
func FuzzDecode(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _, _ = formats.DecodeP12(data, testPassword)
		_, _ = formats.P12EncryptionInfo(data)
		_, _ = formats.ParsePrivateKeyPEM(data, nil)
		_, _ = formats.DistinguishedName(data)
		if _, err := formats.ParsePrivateKey(data, nil); err != nil && !isDocumented(err) &&
			!isPasswordError(err) {
			t.Fatalf("ParsePrivateKey() error %q matches no sentinel", err)
		}
	})
}

func isDocumented(err error) bool {
	for _, s := range []error{formats.ErrEmpty, formats.ErrTruncated, formats.ErrMalformed, formats.ErrUnknownFormat, formats.ErrUnsupported} {
		if errorsIs(err, s) {
			return true
		}
	}
	return false
}

func isPasswordError(err error) bool {
	for _, s := range []error{formats.ErrWrongKind, formats.ErrPasswordRequired, formats.ErrWrongPassword} {
		if errorsIs(err, s) {
			return true
		}
	}
	return false
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
