package proxy

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"minica/identity"
)

// The formats of Config.LogFormat.
const (
	// LogText is the default log format: TIME EVENT key=value ... (see
	// package doc, "Log format").
	LogText = "text"
	// LogJSON writes every line of the log as one JSON object (JSON
	// Lines), for log shippers.
	LogJSON = "json"
)

// LogFormats are the values of Config.LogFormat ("" means LogText).
var LogFormats = []string{LogText, LogJSON}

// ParseLogFormat returns the LogFormat f names (case-insensitive; "" is
// LogText), or an error naming the accepted values.
func ParseLogFormat(f string) (string, error) {
	switch strings.ToLower(f) {
	case "", LogText:
		return LogText, nil
	case LogJSON:
		return LogJSON, nil
	}
	return "", fmt.Errorf("log format %q: want %s", f, strings.Join(LogFormats, " or "))
}

// The decisions of a JSON request line.
const (
	decisionAllowed = "allowed" // the request went to the upstream
	decisionRefused = "refused" // the proxy answered it itself
)

// logRequest writes the access log line of r, answered as rec records,
// in the Config.LogFormat.
func (p *Proxy) logRequest(r *http.Request, id *identity.Identity, rec *recorder, reason string, start time.Time) {
	if !p.log.json {
		p.log.request(r, id, rec.status, reason, rec.upstreamErrText(), time.Since(start))
		return
	}
	bp := p.log.begin("request")
	if bp == nil {
		return
	}
	b := *bp
	b = appendJSONField(b, "remote", r.RemoteAddr)
	route := ""
	if rec.route != nil {
		route = rec.route.Name
	}
	b = appendJSONField(b, "route", route)
	cn, serial, fingerprint := "", "", ""
	if id != nil {
		cn, serial, fingerprint = id.CN, id.SerialHex, id.SHA256
	}
	b = appendJSONField(b, "cn", cn)
	b = appendJSONField(b, "serial", serial)
	b = appendJSONField(b, "fingerprint", fingerprint)
	if id != nil {
		b = append(b, `,"days_left":`...)
		b = strconv.AppendInt(b, int64(id.DaysLeft), 10)
	}
	decision := decisionRefused
	if rec.forwarded {
		decision = decisionAllowed
	}
	b = appendJSONField(b, "decision", decision)
	b = appendJSONField(b, "reason", reason)
	if rec.upstreamErr != nil {
		b = appendJSONField(b, "error", rec.upstreamErrText())
	}
	b = appendJSONField(b, "method", r.Method)
	b = appendJSONField(b, "path", requestPath(r))
	b = appendJSONField(b, "proto", r.Proto)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(rec.status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, rec.bytes, 10)
	b = append(b, `,"latency":`...)
	b = strconv.AppendFloat(b, time.Since(start).Seconds(), 'f', 6, 64)
	*bp = b
	p.log.end(bp)
}

// upstreamErrText is the error of the failed upstream of rec's request,
// "" if none.
func (rec *recorder) upstreamErrText() string {
	if rec.upstreamErr == nil {
		return ""
	}
	return rec.upstreamErr.Error()
}

// bodyTimedOut reports whether the body of r, a request as ServeHTTP got
// it, ran out of time (see timedBody), also when that cut a stream whose
// response had begun, which the upstream error handler does not see. It
// looks at r.Body, where withDeadlines put the timedBody, not in the
// context: a request without a body, the common one, would have its
// lookup walk the whole chain of contexts.
func bodyTimedOut(r *http.Request) bool {
	b, _ := r.Body.(*timedBody)
	return b != nil && b.timedOut()
}

// requestPath is the path of r's request target as the client sent it,
// without the query (which may hold secrets, and is not logged).
func requestPath(r *http.Request) string {
	u := r.RequestURI
	if u == "" && r.URL != nil {
		return r.URL.EscapedPath()
	}
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i]
	}
	return u
}

// appendJSONHead starts a JSON log line: {"time":TIME,"event":EVENT.
func appendJSONHead(b []byte, t time.Time, event string) []byte {
	b = append(b, `{"time":"`...)
	b = t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, '"')
	return appendJSONField(b, "event", event)
}

// appendJSONField appends ,"key":"value"; key is a constant of this
// package, value any bytes at all (see appendJSONString).
func appendJSONField(b []byte, key, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return appendJSONString(b, value)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string of printable ASCII only, so
// that a line never holds a control character or a raw non-ASCII byte:
// '"', '\' and control characters are escaped, non-ASCII characters are
// \uXXXX escapes (a UTF-16 surrogate pair beyond U+FFFF), and each byte
// of invalid UTF-8 becomes \ufffd, the replacement character.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = appendU(b, rune(c))
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r > 0xffff {
			r -= 0x10000
			b = appendU(b, 0xd800+(r>>10))
			b = appendU(b, 0xdc00+(r&0x3ff))
			continue
		}
		b = appendU(b, r) // utf8.RuneError for an invalid byte
	}
	return append(b, '"')
}

// appendU appends \uXXXX for r <= 0xffff.
func appendU(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}
