package eventlog

import (
	"io"
	"sync"
	"time"
)

// Logger writes one line per event to a writer, in the format of this
// package. It is safe for concurrent use: each line is written whole, by
// one Write.
type Logger struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// NewLogger returns a Logger writing to w and dating lines by now; a nil w
// (or io.Discard) writes nothing, a nil now means time.Now.
func NewLogger(w io.Writer, now func() time.Time) *Logger {
	if now == nil {
		now = time.Now
	}
	return &Logger{w: w, now: now}
}

// Event logs event with kv, alternating keys and values; empty values are
// left out.
func (l *Logger) Event(event string, kv ...string) {
	if l.w == nil || l.w == io.Discard {
		return
	}
	b := AppendHead(nil, l.now(), event)
	for i := 0; i+1 < len(kv); i += 2 {
		b = AppendKV(b, kv[i], kv[i+1])
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(b)
}
