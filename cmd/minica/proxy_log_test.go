package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// openTestLog opens a log file whose warnings go to the returned slice.
func openTestLog(t *testing.T, path string) (*logFile, *[]error) {
	t.Helper()
	var warnings []error
	l, err := openLogFile(path, func(err error) { warnings = append(warnings, err) })
	if err != nil {
		t.Fatal(err)
	}
	return l, &warnings
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestLogFileReopen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	l, warnings := openTestLog(t, path)
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
	err := l.Reopen()
	want := `opening access log "` + path + `": open ` + path + `: is a directory`
	if err == nil || err.Error() != want {
		t.Fatalf("Reopen: %v; want %s", err, want)
	}
	write("four\n")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	for file, want := range map[string]string{path + ".1": "one\ntwo\n", path + ".2": "three\nfour\n"} {
		if got, err := os.ReadFile(file); err != nil || string(got) != want {
			t.Errorf("%s: %q %v; want %q", file, got, err, want)
		}
	}
	if len(*warnings) > 0 {
		t.Errorf("warnings: %v", *warnings)
	}
	if _, err := openLogFile(filepath.Join(dir, "no", "such.log"), nil); err == nil {
		t.Error("openLogFile in a missing directory: no error")
	}
}

// Lines wait in the buffer for at most the flush delay, or until it is full
// (then only whole lines are written), or until Close.
func TestLogFileBuffering(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "access.log")
		l, warnings := openTestLog(t, path)
		l.Write([]byte("one\n"))
		if got := readLog(t, path); got != "" {
			t.Fatalf("right after Write: %q; want nothing yet", got)
		}
		time.Sleep(logFlushDelay - time.Millisecond)
		synctest.Wait()
		if got := readLog(t, path); got != "" {
			t.Fatalf("before the flush delay: %q; want nothing yet", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := readLog(t, path); got != "one\n" {
			t.Fatalf("after the flush delay: %q; want %q", got, "one\n")
		}

		// A full buffer is written at once.
		line := strings.Repeat("x", 99) + "\n"
		var want bytes.Buffer
		for want.Len()+len(line) <= logBufSize {
			l.Write([]byte(line))
			want.WriteString(line)
		}
		if got := readLog(t, path); got != "one\n" {
			t.Fatalf("with a full buffer: %d bytes; want 4", len(got))
		}
		l.Write([]byte(line)) // does not fit
		if got := readLog(t, path); got != "one\n"+want.String() {
			t.Fatalf("after the buffer overflowed: %d bytes; want %d", len(got), 4+want.Len())
		}
		// A line longer than the buffer goes out after what was buffered.
		huge := strings.Repeat("y", logBufSize) + "\n"
		l.Write([]byte(huge))
		if got, want := readLog(t, path), "one\n"+want.String()+line+huge; got != want {
			t.Fatalf("after a huge line: %d bytes; want %d", len(got), len(want))
		}

		l.Write([]byte("three\n"))
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if got := readLog(t, path); !strings.HasSuffix(got, huge+"three\n") {
			t.Errorf("after Close: ends with %q; want the last line", got[len(got)-10:])
		}
		if len(*warnings) > 0 {
			t.Errorf("warnings: %v", *warnings)
		}
	})
}

// A failed write is reported once, with what was lost, until a write works.
func TestLogFileWriteError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	l, warnings := openTestLog(t, path)
	l.f.Close() // every write fails from here
	l.Write([]byte("one\n"))
	l.Write([]byte("two\n"))
	l.mu.Lock()
	l.flush()
	l.mu.Unlock()
	l.Write([]byte("three\n"))
	l.mu.Lock()
	l.flush()
	l.mu.Unlock()
	if len(*warnings) != 1 {
		t.Fatalf("warnings: %v; want one", *warnings)
	}
	err := (*warnings)[0]
	want := `writing access log "` + path + `": write ` + path + `: file already closed; 8 bytes of log lines lost`
	if !errors.Is(err, os.ErrClosed) || err.Error() != want {
		t.Errorf("warning %q; want %q, wrapping os.ErrClosed", err, want)
	}
	if err := l.Reopen(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Reopen: %v; want the error of closing the failed file", err)
	}
	l.Write([]byte("four\n"))
	l.Close()
	l.Write([]byte("five\n")) // after Close: nowhere, reported
	if got := readLog(t, path); got != "four\n" {
		t.Errorf("log: %q; want %q", got, "four\n")
	}
	if len(*warnings) != 2 || !errors.Is((*warnings)[1], os.ErrClosed) {
		t.Errorf("warnings: %v; want a second one for the write after Close", *warnings)
	}
}
