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
	"time"
)

// AppendHead appends "TIME EVENT" for an event at t.
func AppendHead(b []byte, t time.Time, event string) []byte {
	b = t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, ' ')
	return append(b, event...)
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
