package formats_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/formats"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestDescribeGolden")

// testPassword protects the encrypted inputs of testdata (see testdata/gen.go).
const testPassword = "correct horse battery staple"

// goldenNow is the reference time of the golden files: the testdata
// certificates were issued on 2026-01-01.
var goldenNow = time.Date(2027, 5, 15, 12, 0, 0, 0, time.UTC)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestDescribeGolden(t *testing.T) {
	tests := []struct {
		golden   string
		input    string
		password string
	}{
		{"ca", "ca.pem", ""},
		{"server-pem", "server.pem", ""},
		{"server-der", "server.der", ""},
		{"chain", "chain.pem", ""},
		{"client-rsa", "client-rsa.pem", ""},
		{"ed25519", "ed25519.pem", ""},
		{"bundle", "bundle.pem", ""},
		{"server-key", "server-key.pem", ""},
		{"server-key-der", "server-key.der", ""},
		{"server-key-sec1", "server-key-sec1.pem", ""},
		{"server-key-enc-locked", "server-key-enc.pem", ""},
		{"server-key-enc", "server-key-enc.pem", testPassword},
		{"rsa-key-pkcs1", "client-rsa-key-pkcs1.pem", ""},
		{"rsa-key-legacy", "client-rsa-key-legacy.pem", testPassword},
		{"ed25519-key", "ed25519-key.pem", ""},
		{"server-pub", "server-pub.pem", ""},
		{"rsa-pub-pkcs1", "rsa-pub-pkcs1.pem", ""},
		{"csr", "server-csr.pem", ""},
		{"crl", "crl.der", ""},
		{"modern-p12-locked", "modern.p12", ""},
		{"modern-p12", "modern.p12", testPassword},
		{"compat-p12", "compat.p12", testPassword},
		{"nss-p12-locked", "nss.p12", ""},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			d, err := formats.Describe(readTestdata(t, tt.input), []byte(tt.password), goldenNow)
			if err != nil {
				t.Fatalf("Describe(%s) error = %v", tt.input, err)
			}
			var text bytes.Buffer
			if err := d.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			js, err := json.MarshalIndent(d, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.golden+".txt", text.Bytes())
			checkGolden(t, tt.golden+".json", append(js, '\n'))
		})
	}
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run go test -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestDescribeErrors(t *testing.T) {
	tests := []struct {
		name     string
		input    []byte
		password string
		wantIs   error
		wantErr  string
	}{
		{"wrong key password", readTestdata(t, "server-key-enc.pem"), "nope", formats.ErrWrongPassword, "wrong password"},
		{"wrong p12 password", readTestdata(t, "modern.p12"), "nope", formats.ErrWrongPassword, "wrong password"},
		{"empty", nil, "", formats.ErrEmpty, "empty input"},
		{"truncated p12", readTestdata(t, "compat.p12")[:500], testPassword, formats.ErrTruncated,
			"truncated input: DER structure announces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := formats.Describe(tt.input, []byte(tt.password), goldenNow)
			if !errors.Is(err, tt.wantIs) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Describe() error = %v; want %v containing %q", err, tt.wantIs, tt.wantErr)
			}
		})
	}
}

func TestDescribeDaysLeft(t *testing.T) {
	data := readTestdata(t, "server.pem") // valid 2026-01-01 to 2028-01-01
	tests := []struct {
		now        time.Time
		wantDays   int
		wantStatus string
	}{
		{time.Date(2027, 12, 31, 0, 0, 0, 0, time.UTC), 1, "valid"},
		{time.Date(2027, 12, 31, 0, 0, 1, 0, time.UTC), 0, "valid"},
		{time.Date(2028, 1, 1, 0, 0, 1, 0, time.UTC), -1, "expired"},
		{time.Date(2028, 1, 11, 0, 0, 0, 0, time.UTC), -10, "expired"},
		{time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC), 731, "not yet valid"},
	}
	for _, tt := range tests {
		d, err := formats.Describe(data, nil, tt.now)
		if err != nil {
			t.Fatal(err)
		}
		c := d.Certificates[0]
		if c.DaysLeft != tt.wantDays || c.Status != tt.wantStatus {
			t.Errorf("at %v: days left %d, status %q; want %d, %q", tt.now, c.DaysLeft, c.Status, tt.wantDays, tt.wantStatus)
		}
	}
}
