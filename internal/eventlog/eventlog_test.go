package eventlog

import (
	"testing"
	"time"
)

func TestLine(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 678e6, time.FixedZone("x", 3600))
	tests := []struct {
		name, key, value, want string
	}{
		{"plain", "cn", "alice", ` cn=alice`},
		{"empty left out", "cn", "", ``},
		{"space", "msg", "a b", ` msg="a b"`},
		{"quote", "cn", `a"b`, ` cn="a\"b"`},
		{"equals", "cn", "a=b", ` cn="a=b"`},
		{"backslash", "cn", `a\b`, ` cn="a\\b"`},
		{"control", "cn", "a\nb", ` cn="a\nb"`},
		{"non-ascii", "cn", "Zoë", ` cn="Zo\u00eb"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendKV(AppendHead(nil, at, "reload"), tt.key, tt.value))
			if want := "2030-01-02T02:04:05.678Z reload" + tt.want; got != want {
				t.Errorf("line = %q; want %q", got, want)
			}
		})
	}
}
