package main

import (
	"fmt"
	"os"
	"sync"
	"time"
)

const (
	// logBufSize bounds the log lines held in memory: a request then costs
	// no write(2) of its own, one is made per logBufSize bytes of lines.
	logBufSize = 64 << 10
	// logFlushDelay bounds how long a line waits in the buffer: this is
	// what a crash (kill -9, power loss) can lose; a graceful stop, a
	// SIGHUP and a failing start lose nothing.
	logFlushDelay = 100 * time.Millisecond
)

// logFile is the --access-log file. Lines are buffered and written, whole
// lines only, when the buffer is full or logFlushDelay after the first
// line buffered, whichever comes first. Reopen swaps it for a fresh open of
// the same path, so that log rotation works: rename the file, then SIGHUP.
// A failed write is reported to warn, once until a write succeeds again.
type logFile struct {
	path  string
	delay time.Duration
	warn  func(error)

	mu      sync.Mutex
	f       *os.File
	buf     []byte
	timer   *time.Timer
	armed   bool // timer runs for the lines in buf
	closed  bool
	failing bool // the last write failed and was reported
}

func openLogFile(path string, warn func(error)) (*logFile, error) {
	f, err := appendFile(path)
	if err != nil {
		return nil, err
	}
	l := &logFile{path: path, delay: logFlushDelay, warn: warn, f: f, buf: make([]byte, 0, logBufSize)}
	l.timer = time.AfterFunc(time.Hour, l.timedFlush)
	l.timer.Stop()
	return l, nil
}

func appendFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening access log %q: %w", path, err)
	}
	return f, nil
}

// Write buffers p, one or more whole lines; it never fails: a failed write
// to the file is reported to warn.
func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.write(p)
		return len(p), nil
	}
	if len(l.buf)+len(p) > cap(l.buf) {
		l.flush()
	}
	if len(p) > cap(l.buf) {
		l.write(p)
		return len(p), nil
	}
	l.buf = append(l.buf, p...)
	if !l.armed {
		l.armed = true
		l.timer.Reset(l.delay)
	}
	return len(p), nil
}

func (l *logFile) timedFlush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed = false
	l.flush()
}

// flush writes the buffered lines; l.mu is held.
func (l *logFile) flush() {
	if len(l.buf) > 0 {
		l.write(l.buf)
		l.buf = l.buf[:0]
	}
}

// write writes p to the file and reports a failure; l.mu is held.
func (l *logFile) write(p []byte) {
	if _, err := l.f.Write(p); err != nil {
		if !l.failing {
			l.failing = true
			l.warn(fmt.Errorf("writing access log %q: %w; %d bytes of log lines lost", l.path, err, len(p)))
		}
		return
	}
	l.failing = false
}

// Reopen writes the buffered lines to the current file, then opens the
// path again and closes the previous file; on error the previous file stays
// in use.
func (l *logFile) Reopen() error {
	next, err := appendFile(l.path)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.flush()
	prev := l.f
	l.f = next
	l.mu.Unlock()
	return prev.Close()
}

// Close writes the buffered lines and closes the file. Lines written after
// it go to the closed file, that is nowhere, with a warning.
func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timer.Stop()
	l.armed = false
	l.flush()
	l.closed = true
	return l.f.Close()
}
