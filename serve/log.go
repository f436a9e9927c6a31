package serve

import (
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// logger writes one line per event, as the proxy does:
//
//	TIME EVENT key=value ...
//
// TIME is RFC 3339 UTC with milliseconds; a value that is not a plain token
// is Go-quoted with non-ASCII escaped, so that a line never holds a control
// character.
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
	b := l.now().UTC().AppendFormat(nil, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, ' ')
	b = append(b, event...)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		b = append(b, ' ')
		b = append(b, kv[i]...)
		b = append(b, '=')
		b = appendValue(b, kv[i+1])
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(b)
}

func appendValue(b []byte, v string) []byte {
	if strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r > '~' || r == '"' || r == '=' }) < 0 {
		return append(b, v...)
	}
	return strconv.AppendQuoteToASCII(b, v)
}
