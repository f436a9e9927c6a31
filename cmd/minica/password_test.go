package main

import (
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
