package proxy

import (
	"strings"
	"testing"
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
	if invalid := logValue("\xff"); invalid != `"\xff"` {
		t.Errorf("logValue(invalid UTF-8) = %q", invalid)
	}
}
