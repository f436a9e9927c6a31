// Package eventlog holds the format of the log lines of minica's
// long-running commands (proxy, serve), one line per event:
//
//	TIME EVENT key=value ...
//
// TIME is RFC 3339 UTC with milliseconds. A value that is not a plain token
// (it holds a space, a control character, a non-ASCII byte, '"', '=' or
// '\') is a Go double-quoted string with non-ASCII escaped
// (strconv.QuoteToASCII), so a line never holds a control character or a
// raw non-ASCII byte. Empty values are left out.
package eventlog

import (
	"strconv"
	"sync/atomic"
	"time"
)

// layout is the format of TIME.
const layout = "2006-01-02T15:04:05.000Z07:00"

// AppendHead appends "TIME EVENT" for an event at t.
func AppendHead(b []byte, t time.Time, event string) []byte {
	b = appendTime(b, t.UTC())
	b = append(b, ' ')
	return append(b, event...)
}

// second is the text of one second of UTC time, "2006-01-02T15:04:05.".
type second struct {
	unix int64
	text [20]byte
}

// lastSecond is the second appendTime formatted last: a busy log writes
// many lines a second, and formats the date and time once for them.
var lastSecond atomic.Pointer[second]

// appendTime appends t, a UTC time, in layout: the second's text formatted
// once per second, then the milliseconds (truncated, as Time.AppendFormat
// does) and "Z". A year outside 0-9999 is left to Time.AppendFormat.
func appendTime(b []byte, t time.Time) []byte {
	s := lastSecond.Load()
	if s == nil || s.unix != t.Unix() {
		if y := t.Year(); y < 0 || y > 9999 {
			return t.AppendFormat(b, layout)
		}
		s = &second{unix: t.Unix()}
		t.AppendFormat(s.text[:0], layout[:len("2006-01-02T15:04:05.")])
		lastSecond.Store(s)
	}
	ms := t.Nanosecond() / 1e6
	b = append(b, s.text[:]...)
	return append(b, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// AppendKV appends " key=value", or nothing when value is empty.
func AppendKV(b []byte, key, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, ' ')
	b = append(b, key...)
	b = append(b, '=')
	if plain(value) {
		return append(b, value...)
	}
	return strconv.AppendQuoteToASCII(b, value)
}

func plain(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '=' || c == '\\' {
			return false
		}
	}
	return true
}
