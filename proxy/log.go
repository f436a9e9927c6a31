package proxy

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// logger writes one line per event:
//
//	TIME EVENT key=value ...
//
// TIME is RFC 3339 UTC with milliseconds; values that are not a plain token
// are Go-quoted with non-ASCII escaped (strconv.QuoteToASCII), so a line
// never holds a control character or raw non-ASCII byte.
type logger struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *logger) line(event string, kv ...string) {
	var b strings.Builder
	b.WriteString(time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	b.WriteByte(' ')
	b.WriteString(event)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		b.WriteByte(' ')
		b.WriteString(kv[i])
		b.WriteByte('=')
		b.WriteString(logValue(kv[i+1]))
	}
	b.WriteByte('\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	io.WriteString(l.w, b.String())
}

func logValue(v string) string {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '=' || c == '\\' {
			return strconv.QuoteToASCII(v)
		}
	}
	return v
}

// request logs one request: client CN and serial, method, URI, protocol,
// status, refusal reason if any, and latency.
func (l *logger) request(r *http.Request, id *Identity, status int, reason string, d time.Duration) {
	cn, serial := "", ""
	if id != nil {
		cn, serial = id.CN, id.SerialHex
	}
	l.line("request", "remote", r.RemoteAddr, "cn", cn, "serial", serial,
		"method", r.Method, "uri", r.RequestURI, "proto", r.Proto,
		"status", strconv.Itoa(status), "reason", reason,
		"latency", strconv.FormatFloat(d.Seconds()*1000, 'f', 3, 64)+"ms")
}

// handshake logs one refused handshake with its reason.
func (l *logger) handshake(remote net.Addr, reason string, ve *VerifyError, err error) {
	cn, serial := "", ""
	if ve != nil && ve.Cert != nil {
		cn, serial = ve.Cert.Subject.CommonName, serialHex(ve.Cert.SerialNumber)
	}
	l.line("handshake-refused", "remote", remote.String(), "reason", reason, "cn", cn, "serial", serial, "error", err.Error())
}

// eventWriter adapts the logger to log.Logger for net/http's own messages.
func (l *logger) eventWriter(event string) io.Writer { return eventWriter{l, event} }

type eventWriter struct {
	l     *logger
	event string
}

func (e eventWriter) Write(p []byte) (int, error) {
	e.l.line(e.event, "msg", strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
