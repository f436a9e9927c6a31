package file

import (
	"bytes"
	"encoding/json"

	"minica/ca/store"
	"minica/ca/store/recordjson"
	"minica/revoke"
)

// parseLogEvent parses one line of the log. Lines in the exact form that
// appendRevEvent writes take a fast path; any other JSON goes through
// encoding/json, so a hand-edited log reads the same.
func parseLogEvent(line []byte) (store.LogEvent, error) {
	if ev, ok := parseLogEventFast(line); ok {
		return ev, nil
	}
	var je store.RevEvent
	if err := json.Unmarshal(line, &je); err != nil {
		return store.LogEvent{}, err
	}
	return store.CompactEvent(je)
}

// parseLogEventFast parses the two forms appendRevEvent writes,
//
//	{"serial":"S","revoked_at":"T","reason":"R","not_after":"T"}
//	{"serial":"S","lifted":true}
//
// with times in RFC 3339 to the second, and reports false for anything else.
func parseLogEventFast(line []byte) (store.LogEvent, bool) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	s, ok := bytes.CutPrefix(line, []byte(`{"serial":"`))
	if !ok || len(s) < 34 || s[32] != '"' {
		return store.LogEvent{}, false
	}
	var ev store.LogEvent
	if !decodeLowerHex(ev.Serial[:], s[:32]) || ev.Serial == [16]byte{} {
		return store.LogEvent{}, false
	}
	s = s[33:]
	if bytes.Equal(s, []byte(`,"lifted":true}`)) {
		ev.Lifted = true
		return ev, true
	}
	at, s, ok1 := cutField(s, `,"revoked_at":"`)
	reason, s, ok2 := cutField(s, `,"reason":"`)
	notAfter, s, ok3 := cutField(s, `,"not_after":"`)
	if !ok1 || !ok2 || !ok3 || !bytes.Equal(s, []byte("}")) {
		return store.LogEvent{}, false
	}
	r, err := revoke.ParseReason(string(reason))
	if err != nil {
		return store.LogEvent{}, false
	}
	if ev.RevokedAt, ok = parseUTCSecond(at); !ok {
		return store.LogEvent{}, false
	}
	if ev.NotAfter, ok = parseUTCSecond(notAfter); !ok {
		return store.LogEvent{}, false
	}
	ev.Reason = uint8(r)
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

// decodeLowerHex decodes lowercase hex, as store.SerialHex writes it.
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
	t, ok := recordjson.ParseUTCTime(s)
	return t.Unix(), ok
}
