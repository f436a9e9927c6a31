package osmem

import (
	"runtime"
	"testing"
	"time"
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

// ReleaseLater of a large size collects once its delay has passed.
func TestReleaseLater(t *testing.T) {
	var before, m runtime.MemStats
	runtime.ReadMemStats(&before)
	ReleaseLater(Large, 10*time.Millisecond)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		runtime.ReadMemStats(&m)
		if m.NumForcedGC > before.NumForcedGC {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("ReleaseLater(Large, 10ms) forced no collection within 5s")
		}
	}
}
