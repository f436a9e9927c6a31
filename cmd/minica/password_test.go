package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadPasswordFile(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("p", maxPasswordFile)
	tests := []struct {
		name    string
		content string // written to a file unless file is set
		file    string
		want    string
		wantErr string
	}{
		{name: "LF", content: "secret\n", want: "secret"},
		{name: "CRLF", content: "secret\r\n", want: "secret"},
		{name: "only one newline dropped", content: "secret\n\n", want: "secret\n"},
		{name: "at the limit", content: long + "\r\n", want: long},
		{name: "one byte over", content: long + "pp",
			wantErr: "is longer than 4096 bytes: a password file holds one password"},
		{name: "endless", file: "/dev/zero",
			wantErr: `reading password file "/dev/zero": it is longer than 4096 bytes: a password file holds one password`},
		{name: "empty", content: "\n", wantErr: "is empty"},
		{name: "missing", file: filepath.Join(dir, "missing"), wantErr: "no such file or directory"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := tt.file
			if file == "" {
				file = filepath.Join(dir, string(rune('a'+i)))
				if err := os.WriteFile(file, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := readPasswordFile(file)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("readPasswordFile() error = %v; want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("readPasswordFile() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// readLine returns one line without its ending and consumes nothing after
// it, so that a password read leaves the rest of the input where it was.
func TestReadLine(t *testing.T) {
	for _, tc := range []struct {
		in, want, rest string
		err            error
	}{
		{"secret\n", "secret", "", nil},
		{"secret\r\nnext\n", "secret", "next\n", nil},
		{"no newline", "no newline", "", nil},
		{"\n", "", "", nil},
		{"", "", "", io.EOF},
	} {
		r := strings.NewReader(tc.in)
		got, err := readLine(r)
		if err != tc.err || string(got) != tc.want {
			t.Errorf("readLine(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
		}
		if rest, _ := io.ReadAll(r); string(rest) != tc.rest {
			t.Errorf("readLine(%q) left %q; want %q", tc.in, rest, tc.rest)
		}
	}
}
