package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLogFileReopen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	l, err := openLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	write := func(s string) {
		t.Helper()
		if _, err := l.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	write("one\n")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	write("two\n") // still the renamed file
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	write("three\n")

	// A reopen that fails keeps the current file.
	if err := os.Rename(path, path+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	err = l.Reopen()
	want := `opening access log "` + path + `": open ` + path + `: is a directory`
	if err == nil || err.Error() != want {
		t.Fatalf("Reopen: %v; want %s", err, want)
	}
	write("four\n")

	for file, want := range map[string]string{path + ".1": "one\ntwo\n", path + ".2": "three\nfour\n"} {
		if got, err := os.ReadFile(file); err != nil || string(got) != want {
			t.Errorf("%s: %q %v; want %q", file, got, err, want)
		}
	}
	if _, err := openLogFile(filepath.Join(dir, "no", "such.log")); err == nil {
		t.Error("openLogFile in a missing directory: no error")
	}
}
