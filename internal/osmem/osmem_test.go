package osmem

import (
	"runtime"
	"testing"
)

// Release of a large array let go returns its pages to the system; below
// Large nothing is collected.
func TestRelease(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	Release(Large - 1)
	runtime.ReadMemStats(&after)
	if after.NumForcedGC != before.NumForcedGC {
		t.Fatalf("Release(Large-1) forced %d collections; want none", after.NumForcedGC-before.NumForcedGC)
	}

	big := make([]byte, 64<<20)
	for i := range big {
		big[i] = byte(i)
	}
	runtime.KeepAlive(big)
	big = nil
	runtime.ReadMemStats(&before)
	Release(64 << 20)
	runtime.ReadMemStats(&after)
	if after.NumForcedGC == before.NumForcedGC {
		t.Fatal("Release(64 MiB) forced no collection")
	}
	if back := int64(after.HeapReleased) - int64(before.HeapReleased); back < 32<<20 {
		t.Fatalf("Release(64 MiB) returned %d MiB to the system; want the 64 MiB array let go of", back>>20)
	}
}
