package eventlog

import (
	"strings"
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

// TestTimeAsAppendFormat checks the once-a-second time text against
// Time.AppendFormat: the same second again, the next one, back in time,
// the edges of a second, of the years 0 and 9999 and outside them, in
// any zone.
func TestTimeAsAppendFormat(t *testing.T) {
	zone := time.FixedZone("x", -5*3600-30*60)
	times := []time.Time{
		time.Date(2026, 12, 2, 7, 59, 59, 999999999, time.UTC),
		time.Date(2026, 12, 2, 7, 59, 59, 0, time.UTC),
		time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 2, 8, 0, 0, 1e6-1, zone),
		time.Date(2026, 12, 2, 7, 59, 59, 5e8, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 12e6, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Now(),
	}
	start := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	for i := range 3000 {
		times = append(times, start.Add(time.Duration(i)*time.Millisecond*7/3), start.Add(-time.Duration(i)*time.Second))
	}
	for _, at := range times {
		got := string(AppendHead([]byte("x"), at, "e"))
		if want := "x" + at.UTC().Format(layout) + " e"; got != want {
			t.Fatalf("AppendHead(%v) = %q, want %q", at, got, want)
		}
	}
}

func BenchmarkAppendHead(b *testing.B) {
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf = AppendHead(buf[:0], time.Now(), "request")
	}
}

func TestLogger(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var b strings.Builder
	l := NewLogger(&b, func() time.Time { return at })
	l.Event("crl-loaded", "number", "7", "empty", "", "odd")
	if want := "2030-01-02T03:04:05.000Z crl-loaded number=7\n"; b.String() != want {
		t.Errorf("logged %q; want %q", b.String(), want)
	}
	NewLogger(nil, nil).Event("nothing") // a nil writer writes nothing
}
