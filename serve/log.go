package serve

import (
	"io"
	"sync"
	"time"

	"minica/internal/eventlog"
)

// logger writes one line per event, in the format of package eventlog
// (the proxy's).
type logger struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// event logs event with kv, alternating keys and values; empty values are
// left out.
func (l *logger) event(event string, kv ...string) {
	if l.w == nil || l.w == io.Discard {
		return
	}
	b := eventlog.AppendHead(nil, l.now(), event)
	for i := 0; i+1 < len(kv); i += 2 {
		b = eventlog.AppendKV(b, kv[i], kv[i+1])
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(b)
}
