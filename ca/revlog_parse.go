package ca

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"minica/revoke"
)

// logEvent is a revocation log line in 40 bytes: a CRL of a million entries
// reads a million of them, which as revEvent values would take 130 MB.
// Times are Unix seconds; the CRL holds no finer ones.
type logEvent struct {
	serial    [16]byte
	revokedAt int64
	notAfter  int64
	line      uint32 // position in the log: the latest line of a serial wins
	reason    uint8  // a revoke.Reason
	lifted    bool
}

// hex returns the serial as record files name it.
func (ev *logEvent) hex() string { return hex.EncodeToString(ev.serial[:]) }

// revEvent returns ev in the log's JSON form.
func (ev *logEvent) revEvent() revEvent {
	if ev.lifted {
		return revEvent{Serial: ev.hex(), Lifted: true}
	}
	return revEvent{Serial: ev.hex(), RevokedAt: unixTime(ev.revokedAt), Reason: revoke.Reason(ev.reason).String(), NotAfter: unixTime(ev.notAfter)}
}

// unixTime is the inverse of Time.Unix, in UTC: the zero Time stays zero.
func unixTime(sec int64) time.Time { return time.Unix(sec, 0).UTC() }

var errBadEvent = errors.New("not a revocation event")

// parseLogEvent parses one line of the log. Lines in the exact form that
// appendRevEvent writes take a fast path; any other JSON goes through
// encoding/json, so a hand-edited log reads the same.
func parseLogEvent(line []byte) (logEvent, error) {
	if ev, ok := parseLogEventFast(line); ok {
		return ev, nil
	}
	var je revEvent
	if err := json.Unmarshal(line, &je); err != nil {
		return logEvent{}, err
	}
	return compactEvent(je)
}

// compactEvent checks a decoded line and returns it as a logEvent.
func compactEvent(je revEvent) (logEvent, error) {
	var ev logEvent
	if len(je.Serial) != 32 {
		return ev, errBadEvent
	}
	if _, err := hex.Decode(ev.serial[:], []byte(je.Serial)); err != nil || ev.serial == [16]byte{} {
		return ev, fmt.Errorf("invalid serial %q", je.Serial)
	}
	if je.Lifted {
		ev.lifted = true
		return ev, nil
	}
	reason, err := revoke.ParseReason(je.Reason)
	if err != nil {
		return ev, fmt.Errorf("serial %s: %w", je.Serial, err)
	}
	ev.reason, ev.revokedAt, ev.notAfter = uint8(reason), je.RevokedAt.Unix(), je.NotAfter.Unix()
	return ev, nil
}

// parseLogEventFast parses the two forms appendRevEvent writes,
//
//	{"serial":"S","revoked_at":"T","reason":"R","not_after":"T"}
//	{"serial":"S","lifted":true}
//
// with times in RFC 3339 to the second, and reports false for anything else.
func parseLogEventFast(line []byte) (logEvent, bool) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	s, ok := bytes.CutPrefix(line, []byte(`{"serial":"`))
	if !ok || len(s) < 34 || s[32] != '"' {
		return logEvent{}, false
	}
	var ev logEvent
	if !decodeLowerHex(ev.serial[:], s[:32]) || ev.serial == [16]byte{} {
		return logEvent{}, false
	}
	s = s[33:]
	if bytes.Equal(s, []byte(`,"lifted":true}`)) {
		ev.lifted = true
		return ev, true
	}
	at, s, ok1 := cutField(s, `,"revoked_at":"`)
	reason, s, ok2 := cutField(s, `,"reason":"`)
	notAfter, s, ok3 := cutField(s, `,"not_after":"`)
	if !ok1 || !ok2 || !ok3 || !bytes.Equal(s, []byte("}")) {
		return logEvent{}, false
	}
	r, err := revoke.ParseReason(string(reason))
	if err != nil {
		return logEvent{}, false
	}
	if ev.revokedAt, ok = parseUTCSecond(at); !ok {
		return logEvent{}, false
	}
	if ev.notAfter, ok = parseUTCSecond(notAfter); !ok {
		return logEvent{}, false
	}
	ev.reason = uint8(r)
	return ev, true
}

// cutField reads prefix, a string value without escapes and its closing
// quote from s.
func cutField(s []byte, prefix string) (value, rest []byte, ok bool) {
	s, ok = bytes.CutPrefix(s, []byte(prefix))
	if !ok {
		return nil, nil, false
	}
	end := bytes.IndexByte(s, '"')
	if end < 0 || bytes.IndexByte(s[:end], '\\') >= 0 {
		return nil, nil, false
	}
	return s[:end], s[end+1:], true
}

// decodeLowerHex decodes lowercase hex, as SerialHex writes it.
func decodeLowerHex(dst, src []byte) bool {
	for i := range dst {
		hi, ok1 := lowerHexDigit(src[2*i])
		lo, ok2 := lowerHexDigit(src[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func lowerHexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// parseUTCSecond parses "YYYY-MM-DDTHH:MM:SSZ", the form json.Marshal gives
// a UTC time without fraction, to Unix seconds. It reports false for any
// other form, and for fields out of range (time.Parse would refuse them).
func parseUTCSecond(s []byte) (int64, bool) {
	if len(s) != 20 {
		return 0, false
	}
	t, ok := parseRecordTime(s)
	return t.Unix(), ok
}
