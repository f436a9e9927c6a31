package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunAppendsDistinctRevocations(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "db"), 0o700); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "db", "revoked.log")
	existing := `{"serial":"0a","revoked_at":"2026-01-01T00:00:00Z","reason":"keyCompromise"}` + "\n"
	if err := os.WriteFile(log, []byte(existing), 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	if err := run(dir, n); err != nil {
		t.Fatalf("run: %v", err)
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	if got := sc.Text() + "\n"; got != existing {
		t.Fatalf("first line = %q; want the existing %q kept", got, existing)
	}
	seen := map[string]bool{}
	for sc.Scan() {
		var ev revEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if len(ev.Serial) != 32 || strings.Trim(ev.Serial, "0123456789abcdef") != "" || ev.Serial[0] >= '8' {
			t.Errorf("serial %q is not 32 hex digits of a positive 128-bit number", ev.Serial)
		}
		if seen[ev.Serial] {
			t.Errorf("serial %q appended twice", ev.Serial)
		}
		seen[ev.Serial] = true
		if ev.Reason != "superseded" || ev.RevokedAt.IsZero() || !ev.NotAfter.After(ev.RevokedAt) {
			t.Errorf("event %+v: want reason superseded, revoked before notAfter", ev)
		}
	}
	if len(seen) != n {
		t.Errorf("appended %d revocations; want %d", len(seen), n)
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name string
		dir  string
		want error
		msg  string
	}{
		{"no directory", "", nil, "no CA directory: set -dir or MINICA_DIR"},
		{"no db directory", t.TempDir(), fs.ErrNotExist, "opening revocation log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(tt.dir, 1)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("run(%q) error = %v; want one containing %q", tt.dir, err, tt.msg)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("run(%q) error = %v; want it to wrap %v", tt.dir, err, tt.want)
			}
		})
	}
}
