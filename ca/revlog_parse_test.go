package ca

import (
	"strings"
	"testing"
)

// TestCorruptRevocationLog: a bad line stops publishing and names the line.
const testSerial = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"

func TestCorruptRevocationLog(t *testing.T) {
	good := `{"serial":"` + testSerial + `","lifted":true}` + "\n"
	tests := []struct {
		name    string
		log     string
		wantErr string
	}{
		{"short serial", good + `{"serial":"0a","lifted":true}` + "\n", "line 2"},
		{"unknown reason", good + good + `{"serial":"` + testSerial + `","revoked_at":"2030-01-02T03:04:05Z","reason":"lost","not_after":"2031-01-02T03:04:05Z"}` + "\n",
			"line 3: serial " + testSerial + ": unknown revocation reason \"lost\""},
		{"too long", strings.Repeat(" ", 70<<10) + "\n", "line 1 is too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, signer := newTestCA(t, InitOptions{})
			if err := c.dir.MkdirAll("db"); err != nil {
				t.Fatal(err)
			}
			if err := c.dir.Root().WriteFile(revlogFile, []byte(tt.log), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := c.PublishCRL(signer, 0)
			want := "corrupt revocation log \"" + c.Path(revlogFile) + "\": " + tt.wantErr
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("PublishCRL error = %v; want starting %q", err, want)
			}
		})
	}
}
