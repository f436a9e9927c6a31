package file

import (
	"errors"
	"strings"
	"testing"

	"minica/ca/store"
)

// A record file is a log of the states its certificate reached; the last
// line that ends in a newline is the current one.
func TestDecodeRecordTakesLastCompleteLine(t *testing.T) {
	serial := strings.Repeat("ab", 16)
	file := "db/ab/" + serial + ".json"
	line := func(s store.Status) string {
		return string(store.EncodeRecord(&store.Record{Serial: serial, Name: "simon", Profile: "client", Status: s}))
	}
	tests := []struct {
		name string
		data string
		want store.Status // "" for a corrupt record
	}{
		{"one line", line(store.StatusValid), store.StatusValid},
		{"pending then valid", line(store.StatusPending) + line(store.StatusValid), store.StatusValid},
		{"completion cut short", line(store.StatusPending) + line(store.StatusValid)[:40], store.StatusPending},
		{"three states", line(store.StatusPending) + line(store.StatusValid) + line(store.StatusRevoked), store.StatusRevoked},
		{"no newline", strings.TrimSuffix(line(store.StatusValid), "\n"), ""},
		{"empty", "", ""},
		{"last line garbage", line(store.StatusPending) + "{\"serial\":\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := decodeRecord([]byte(tt.data), file)
			if tt.want == "" {
				var corrupt *store.CorruptRecordError
				if !errors.As(err, &corrupt) || corrupt.Serial != serial {
					t.Fatalf("decodeRecord() = %v, %v; want a store.CorruptRecordError for serial %s", r, err, serial)
				}
				return
			}
			if err != nil || r.Status != tt.want {
				t.Fatalf("decodeRecord() = %v, %v; want status %s", r, err, tt.want)
			}
		})
	}
}
