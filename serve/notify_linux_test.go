package serve

import (
	"context"
	"testing"
	"time"
)

// On Linux, Watch hears of a CRL that another process publishes at once
// (inotify on the CA directory), without waiting for its poll: here the
// poll timer never fires, and the new CRL is served all the same.
func TestWatchHearsAtOnce(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.srv.Watch(ctx)
	f.timers.await(t) // the first round is done; its poll timer is never fired
	info := f.publishElsewhere(t)
	deadline := time.Now().Add(5 * time.Second)
	for f.srv.CRL().Number().Cmp(info.Number) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("served CRL %s 5s after %s was published, with no poll", f.srv.CRL().Number(), info.Number)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// On Linux, a delta CRL that another process publishes reaches a long poll
// that follows delta CRLs at once, without waiting for Watch's poll: here
// the poll timer never fires.
func TestWatchHearsDeltaAtOnce(t *testing.T) {
	f := newDeltaFixture(t)
	base := f.completeNumber().String()
	emptyDelta := f.do(t, "GET", "/crl-delta.der").Header().Get("ETag")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.srv.Watch(ctx)
	f.timers.await(t) // the first round is done; its poll timer is never fired
	poll := f.startPoll(t, hdrCRLBase, base, "If-None-Match", emptyDelta, "Prefer", "wait=30")
	if d := f.timers.await(t); d != 30*time.Second {
		t.Fatalf("the long poll waits %s; want 30s", d)
	}
	// The rounds that notifications run make timers too: let them.
	go func() {
		for {
			select {
			case <-f.timers.made:
			case <-ctx.Done():
				return
			}
		}
	}()
	f.revokeDelta(t, "alice")
	rec := answer(t, poll)
	if d := f.parseDelta(t, rec); d.Len() != 1 || rec.Header().Get(hdrDeltaCRL) != "base="+base {
		t.Fatalf("delta %s of %d entries with %s %q; want alice's, base=%s", d.Number(), d.Len(), hdrDeltaCRL, rec.Header().Get(hdrDeltaCRL), base)
	}
}
