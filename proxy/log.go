package proxy

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"minica/identity"
	"minica/internal/eventlog"
)

// logger writes one line per event, in the format of package eventlog.
type logger struct {
	mu   sync.Mutex
	w    io.Writer
	json bool // LogJSON: one JSON object per line (see accesslog.go)
}

// lineBufs spares every log line its allocations: a line is appended into
// a pooled buffer and written with one Write.
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// begin returns a pooled buffer holding TIME and EVENT, or nil when the
// log is discarded, so that nothing is formatted for nobody.
func (l *logger) begin(event string) *[]byte {
	if l.w == io.Discard {
		return nil
	}
	bp := lineBufs.Get().(*[]byte)
	if l.json {
		*bp = appendJSONHead((*bp)[:0], time.Now(), event)
		return bp
	}
	*bp = eventlog.AppendHead((*bp)[:0], time.Now(), event)
	return bp
}

// end writes the line in bp and returns bp to the pool.
func (l *logger) end(bp *[]byte) {
	b := *bp
	if l.json {
		b = append(b, '}')
	}
	b = append(b, '\n')
	l.mu.Lock()
	l.w.Write(b)
	l.mu.Unlock()
	if cap(b) <= 64<<10 { // a huge line's buffer is left to the GC
		*bp = b[:0]
		lineBufs.Put(bp)
	}
}

// appendKV appends " key=value", or nothing when value is empty.
func appendKV(b []byte, key, value string) []byte { return eventlog.AppendKV(b, key, value) }

func (l *logger) line(event string, kv ...string) {
	bp := l.begin(event)
	if bp == nil {
		return
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if l.json {
			if kv[i+1] != "" {
				*bp = appendJSONField(*bp, kv[i], kv[i+1])
			}
			continue
		}
		*bp = appendKV(*bp, kv[i], kv[i+1])
	}
	l.end(bp)
}

// request logs one request: client CN and serial, method, URI, protocol,
// status, refusal reason if any, and latency.
// errText, when not empty, is the error of a failed upstream.
func (l *logger) request(r *http.Request, id *identity.Identity, status int, reason, errText string, d time.Duration) {
	bp := l.begin("request")
	if bp == nil {
		return
	}
	b := appendKV(*bp, "remote", r.RemoteAddr)
	if id != nil {
		b = appendKV(b, "cn", id.CN)
		b = appendKV(b, "serial", id.SerialHex)
		b = append(b, " days_left="...)
		b = strconv.AppendInt(b, int64(id.DaysLeft), 10)
	}
	b = appendKV(b, "method", r.Method)
	b = appendKV(b, "uri", r.RequestURI)
	b = appendKV(b, "proto", r.Proto)
	b = append(b, " status="...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = appendKV(b, "reason", reason)
	b = appendKV(b, "error", errText)
	b = append(b, " latency="...)
	b = strconv.AppendFloat(b, d.Seconds()*1000, 'f', 3, 64)
	*bp = append(b, "ms"...)
	l.end(bp)
}

// handshake logs one refused handshake with its reason.
func (l *logger) handshake(remote net.Addr, reason string, ve *VerifyError, err error) {
	cn, serial := "", ""
	if ve != nil && ve.Cert != nil {
		cn, serial = ve.Cert.Subject.CommonName, identity.SerialHex(ve.Cert.SerialNumber)
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
