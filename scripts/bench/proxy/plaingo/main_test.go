package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNewServerErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, upstream, cert, ca, want string
	}{
		{"bad upstream", "127.0.0.1:80", empty, empty, `upstream "127.0.0.1:80": want http://HOST:PORT`},
		{"no certificate", "http://127.0.0.1:80", filepath.Join(dir, "none.pem"), empty, "loading server certificate:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newServer("127.0.0.1:0", tt.upstream, tt.cert, tt.cert, tt.ca)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("newServer error = %v; want it to start with %q", err, tt.want)
			}
		})
	}
}
