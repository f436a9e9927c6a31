package proxy

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"minica/identity"
)

func TestLogLine(t *testing.T) {
	var b strings.Builder
	l := &logger{w: &b}
	l.line("request", "cn", "Zoë\nX", "serial", "0A", "reason", "", "uri", `/a b"c=d\`, "ok", "plain-token/1.0")
	got := b.String()
	_, rest, _ := strings.Cut(got, " ") // drop the time
	want := `request cn="Zo\u00eb\nX" serial=0A uri="/a b\"c=d\\" ok=plain-token/1.0` + "\n"
	if rest != want {
		t.Errorf("line = %q; want %q", rest, want)
	}
	if bad := strings.IndexFunc(got[:len(got)-1], func(r rune) bool { return r < 0x20 || r >= 0x7f }); bad >= 0 {
		t.Errorf("line %q has a control or non-ASCII character", got)
	}
	if invalid := string(appendKV(nil, "k", "\xff")); invalid != ` k="\xff"` {
		t.Errorf("appendKV(invalid UTF-8) = %q", invalid)
	}
}

func TestLogRequest(t *testing.T) {
	r := httptest.NewRequest("GET", "https://localhost/a%20b?q=1", nil)
	r.RemoteAddr = "127.0.0.1:5000"
	id := &identity.Identity{CN: "Zoë", SerialHex: "0a1b", DaysLeft: 42}
	tests := []struct {
		name   string
		id     *identity.Identity
		status int
		reason string
		want   string
	}{
		{"forwarded", id, 200, "", `request remote=127.0.0.1:5000 cn="Zo\u00eb" serial=0a1b days_left=42 method=GET uri="https://localhost/a%20b?q=1" proto=HTTP/1.1 status=200 latency=1.500ms` + "\n"},
		{"refused", id, 403, ReasonRevoked, `request remote=127.0.0.1:5000 cn="Zo\u00eb" serial=0a1b days_left=42 method=GET uri="https://localhost/a%20b?q=1" proto=HTTP/1.1 status=403 reason=revoked latency=1.500ms` + "\n"},
		{"no identity", nil, 403, ReasonNoCertificate, `request remote=127.0.0.1:5000 method=GET uri="https://localhost/a%20b?q=1" proto=HTTP/1.1 status=403 reason=no-certificate latency=1.500ms` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			l := &logger{w: &b}
			l.request(r, tt.id, tt.status, tt.reason, "", 1500*time.Microsecond)
			_, rest, _ := strings.Cut(b.String(), " ")
			if rest != tt.want {
				t.Errorf("line = %q; want %q", rest, tt.want)
			}
		})
	}
}

func TestLogDiscardFormatsNothing(t *testing.T) {
	l := &logger{w: io.Discard}
	r := httptest.NewRequest("GET", "/", nil)
	if n := testing.AllocsPerRun(100, func() { l.request(r, nil, 200, "", "", time.Millisecond) }); n != 0 {
		t.Errorf("request to a discarded log: %v allocations; want 0", n)
	}
}
