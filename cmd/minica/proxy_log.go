package main

import (
	"fmt"
	"os"
	"sync"
)

// logFile is the --access-log file. Reopen swaps it for a fresh open of the
// same path, so that log rotation works: rename the file, then SIGHUP.
type logFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

func openLogFile(path string) (*logFile, error) {
	f, err := appendFile(path)
	if err != nil {
		return nil, err
	}
	return &logFile{path: path, f: f}, nil
}

func appendFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening access log %q: %w", path, err)
	}
	return f, nil
}

// Write appends p to the current file.
func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

// Reopen opens the path again and closes the previous file; on error the
// previous file stays in use.
func (l *logFile) Reopen() error {
	next, err := appendFile(l.path)
	if err != nil {
		return err
	}
	l.mu.Lock()
	prev := l.f
	l.f = next
	l.mu.Unlock()
	return prev.Close()
}

// Close closes the current file.
func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
