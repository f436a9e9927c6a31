// Package ratelimit bounds the requests of each source address, and of
// all addresses together, with token buckets: serve's enrollment links
// (serve/enroll) and bootstrap tokens (serve/renew) use it to bound what a
// guesser or a flood can try. Limits live in one process's memory; each
// replica keeps its own.
package ratelimit

import (
	"net"
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
	b.refill(now, rate, burst)
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	return time.Duration((1 - b.tokens) / rate * float64(time.Second)), false
}

// refill adds the tokens earned since b.at, up to burst; a new bucket, or
// one whose clock went back, starts full.
func (b *bucket) refill(now time.Time, rate, burst float64) {
	if b.at.IsZero() || now.Before(b.at) {
		b.tokens, b.at = burst, now
	}
	b.tokens = min(burst, b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
}

// full reports whether b has refilled to burst by now (an idle address).
func (b *bucket) full(now time.Time, rate, burst float64) bool {
	return b.tokens+now.Sub(b.at).Seconds()*rate >= burst
}

// Limits limits requests per source address and in total. Its table of
// addresses holds at most max entries: when it is full, idle addresses
// (buckets refilled) are dropped, and if none is idle a new address is
// refused, so that a flood of addresses cannot grow it. It is safe for
// concurrent use.
type Limits struct {
	mu                    sync.Mutex
	rate, burst           float64
	totalRate, totalBurst float64
	total                 bucket
	addrs                 map[string]*bucket
	max                   int
}

// New limits each address to rate requests a minute (bursts of burst) and
// all together to totalRate a minute (bursts of totalBurst), keeping at
// most maxAddrs addresses. Every argument must be positive.
func New(rate, burst, totalRate, totalBurst, maxAddrs int) *Limits {
	return &Limits{
		rate: float64(rate) / 60, burst: float64(burst),
		totalRate: float64(totalRate) / 60, totalBurst: float64(totalBurst),
		addrs: map[string]*bucket{}, max: maxAddrs,
	}
}

// Allow takes a token for addr (see Key) and one from the total, at now;
// when either is empty it takes none and returns how long to wait.
func (l *Limits) Allow(addr string, now time.Time) (time.Duration, bool) {
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

// Return gives back the tokens an allowed request of addr took, for a
// caller that counts only some outcomes (a failed try, say): it takes the
// token before the try, so that concurrent tries are bounded too, and
// returns it when the try turns out not to count.
func (l *Limits) Return(addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.addrs[addr]; b != nil {
		b.refill(now, l.rate, l.burst)
		b.tokens = min(l.burst, b.tokens+1)
	}
	l.total.refill(now, l.totalRate, l.totalBurst)
	l.total.tokens = min(l.totalBurst, l.total.tokens+1)
}

// Host returns the host of a request's RemoteAddr ("host:port"), or
// remoteAddr itself when it has no port.
func Host(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	return host
}

// Key is what the per-address limit counts for host: the address, or for
// IPv6 its /64, the block one subscriber gets.
func Key(host string) string {
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return host
}
