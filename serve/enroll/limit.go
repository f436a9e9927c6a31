package enroll

import (
	"sync"
	"time"
)

// bucket is a token bucket: tokens refill at rate per second up to burst.
type bucket struct {
	tokens float64
	at     time.Time
}

// take refills b to now and takes one token; when none is left it returns
// how long until one is.
func (b *bucket) take(now time.Time, rate, burst float64) (time.Duration, bool) {
	if b.at.IsZero() || now.Before(b.at) {
		b.tokens, b.at = burst, now
	}
	b.tokens = min(burst, b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	return time.Duration((1 - b.tokens) / rate * float64(time.Second)), false
}

// full reports whether b has refilled to burst by now (an idle address).
func (b *bucket) full(now time.Time, rate, burst float64) bool {
	return b.tokens+now.Sub(b.at).Seconds()*rate >= burst
}

// rateLimits limits requests per source address and in total. The table of
// addresses holds at most max entries: when it is full, idle addresses
// (buckets refilled) are dropped, and if none is idle the request counts
// as refused, so that a flood of addresses cannot grow it.
type rateLimits struct {
	mu                    sync.Mutex
	rate, burst           float64
	totalRate, totalBurst float64
	total                 bucket
	addrs                 map[string]*bucket
	max                   int
}

// newRateLimits limits each address to rate requests a minute (bursts of
// burst) and all together to totalRate a minute (bursts of totalBurst).
func newRateLimits(rate, burst, totalRate, totalBurst, max int) *rateLimits {
	return &rateLimits{
		rate: float64(rate) / 60, burst: float64(burst),
		totalRate: float64(totalRate) / 60, totalBurst: float64(totalBurst),
		addrs: map[string]*bucket{}, max: max,
	}
}

// allow takes a token for addr and one from the total; when refused it
// returns how long to wait.
func (l *rateLimits) allow(addr string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.addrs[addr]
	if b == nil {
		if len(l.addrs) >= l.max {
			for a, old := range l.addrs {
				if old.full(now, l.rate, l.burst) {
					delete(l.addrs, a)
				}
			}
			if len(l.addrs) >= l.max {
				return time.Minute, false
			}
		}
		b = &bucket{}
		l.addrs[addr] = b
	}
	if wait, ok := b.take(now, l.rate, l.burst); !ok {
		return wait, false
	}
	if wait, ok := l.total.take(now, l.totalRate, l.totalBurst); !ok {
		b.tokens++ // the address's request did not happen
		return wait, false
	}
	return 0, true
}
