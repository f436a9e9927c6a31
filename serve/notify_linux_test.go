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
