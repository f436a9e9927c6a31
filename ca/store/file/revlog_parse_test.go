package file

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"minica/ca/store"
	"minica/revoke"
)

const testSerial = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"

func TestParseLogEvent(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	expiry := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	revoked := store.LogEvent{RevokedAt: at.Unix(), NotAfter: expiry.Unix(), Reason: uint8(revoke.KeyCompromise)}
	revoked.Serial = [16]byte{0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f, 0x60, 0x71, 0x82, 0x93, 0xa4, 0xb5, 0xc6, 0xd7, 0xe8, 0xf9}
	lifted := store.LogEvent{Serial: revoked.Serial, Lifted: true}
	tests := []struct {
		name string
		line string
		fast bool // the fast path takes it
		want store.LogEvent
	}{
		{"as appended", `{"serial":"` + testSerial + `","revoked_at":"2030-01-02T03:04:05Z","reason":"keyCompromise","not_after":"2031-01-02T03:04:05Z"}` + "\n", true, revoked},
		{"lifted hold", `{"serial":"` + testSerial + `","lifted":true}` + "\n", true, lifted},
		{"no newline", `{"serial":"` + testSerial + `","lifted":true}`, true, lifted},
		{"fraction of a second", `{"serial":"` + testSerial + `","revoked_at":"2030-01-02T03:04:05.9Z","reason":"keyCompromise","not_after":"2031-01-02T03:04:05Z"}`, false, revoked},
		{"time zone offset", `{"serial":"` + testSerial + `","revoked_at":"2030-01-02T04:04:05+01:00","reason":"keyCompromise","not_after":"2031-01-02T03:04:05Z"}`, false, revoked},
		{"fields reordered", `{"reason":"keyCompromise","serial":"` + testSerial + `","not_after":"2031-01-02T03:04:05Z","revoked_at":"2030-01-02T03:04:05Z"}`, false, revoked},
		{"spaces", `{ "serial": "` + testSerial + `", "lifted": true }`, false, lifted},
		{"upper-case serial", `{"serial":"` + strings.ToUpper(testSerial) + `","lifted":true}`, false, lifted},
		{"reason in another case", `{"serial":"` + testSerial + `","revoked_at":"2030-01-02T03:04:05Z","reason":"KEYCOMPROMISE","not_after":"2031-01-02T03:04:05Z"}`, true, revoked},
		{"escaped reason", `{"serial":"` + testSerial + `","revoked_at":"2030-01-02T03:04:05Z","reason":"key\u0043ompromise","not_after":"2031-01-02T03:04:05Z"}`, false, revoked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLogEvent([]byte(tt.line))
			if err != nil {
				t.Fatalf("parseLogEvent: %v", err)
			}
			if got != tt.want {
				t.Errorf("parseLogEvent = %+v; want %+v", got, tt.want)
			}
			if _, fast := parseLogEventFast([]byte(tt.line)); fast != tt.fast {
				t.Errorf("fast path took it: %v; want %v", fast, tt.fast)
			}
			// Whatever the path, the result is what encoding/json reads.
			var je store.RevEvent
			if err := json.Unmarshal([]byte(tt.line), &je); err != nil {
				t.Fatal(err)
			}
			if slow, err := store.CompactEvent(je); err != nil || slow != got {
				t.Errorf("through encoding/json: %+v, %v; want %+v", slow, err, got)
			}
		})
	}
}

func TestParseLogEventErrors(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		wantErr string
	}{
		{"short serial", `{"serial":"0a1b","lifted":true}`, store.ErrBadEvent.Error()},
		{"no serial", `{"lifted":true}`, store.ErrBadEvent.Error()},
		{"not hex", `{"serial":"0a1b2c3d4e5f60718293a4b5c6d7e8fx","lifted":true}`, `invalid serial "0a1b2c3d4e5f60718293a4b5c6d7e8fx"`},
		{"zero serial", `{"serial":"00000000000000000000000000000000","lifted":true}`, `invalid serial "00000000000000000000000000000000"`},
		{"unknown reason", `{"serial":"` + testSerial + `","revoked_at":"2030-01-02T03:04:05Z","reason":"lost","not_after":"2031-01-02T03:04:05Z"}`,
			"serial " + testSerial + ": unknown revocation reason \"lost\""},
		{"no reason", `{"serial":"` + testSerial + `","revoked_at":"2030-01-02T03:04:05Z","not_after":"2031-01-02T03:04:05Z"}`,
			"serial " + testSerial + ": unknown revocation reason \"\""},
		{"bad time", `{"serial":"` + testSerial + `","revoked_at":"2030-02-30T03:04:05Z","reason":"superseded","not_after":"2031-01-02T03:04:05Z"}`,
			`parsing time "2030-02-30T03:04:05Z": day out of range`},
		{"not JSON", `{"serial":"` + testSerial + `",`, "unexpected end of JSON input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseLogEvent([]byte(tt.line))
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("parseLogEvent error = %v; want starting %q", err, tt.wantErr)
			}
			if tt.wantErr == store.ErrBadEvent.Error() && !errors.Is(err, store.ErrBadEvent) {
				t.Errorf("error %v does not match store.ErrBadEvent", err)
			}
		})
	}
}

func TestParseUTCSecond(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"2030-01-02T03:04:05Z", true},
		{"1970-01-01T00:00:00Z", true},
		{"0001-01-01T00:00:00Z", true},
		{"9999-12-31T23:59:59Z", true},
		{"2028-02-29T12:00:00Z", true},
		{"2030-02-29T12:00:00Z", false},
		{"2030-13-01T00:00:00Z", false},
		{"2030-00-01T00:00:00Z", false},
		{"2030-01-01T24:00:00Z", false},
		{"2030-01-01T00:60:00Z", false},
		{"2030-01-01T00:00:60Z", false},
		{"2030-01-01T00:00:00+00:00", false},
		{"2030-01-01 00:00:00Z", false},
		{"2030-0a-01T00:00:00Z", false},
	}
	for _, tt := range tests {
		got, ok := parseUTCSecond([]byte(tt.in))
		if ok != tt.ok {
			t.Errorf("parseUTCSecond(%q) ok = %v; want %v", tt.in, ok, tt.ok)
			continue
		}
		if ok {
			want, err := time.Parse(time.RFC3339, tt.in)
			if err != nil || got != want.Unix() {
				t.Errorf("parseUTCSecond(%q) = %d; want %d (%v)", tt.in, got, want.Unix(), err)
			}
		}
	}
}
