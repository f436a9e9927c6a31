package crlsource

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"minica/internal/atomicfile"
	"minica/internal/osmem"
	"minica/internal/regfile"
)

// Defaults of the Follower, used when a field is zero.
const (
	DefaultRefresh       = time.Minute
	DefaultWait          = 55 * time.Second
	DefaultStartAttempts = 3
	DefaultMinBackoff    = time.Second
	// DefaultMaxBackoff bounds the wait between retries while the URL
	// fails, so that a replica has the current CRL within about that long
	// of the server's return, however long it was away. A retry every 2.5
	// to 5 s is one cheap request (mostly a refused connection) per replica.
	DefaultMaxBackoff = 5 * time.Second
)

// More reasons, of the Follower.
const (
	// ReasonRefused is a CRL that Sink.Changed refused, when its error
	// names no reason (a *Refusal).
	ReasonRefused = "refused"
	// ReasonCache is a cache file that could not be written or read.
	ReasonCache = "cache"
)

// minGap is the least time between two requests to a server that applies
// Prefer: wait, so that one answering at once every time is not polled in
// a tight loop.
const minGap = 100 * time.Millisecond

// ErrNoCRL is returned by Start when neither the URL nor the cache gave a CRL.
var ErrNoCRL = errors.New("no CRL from the URL nor from the cache")

// Follower keeps the CRL of one URL current (see the package doc). Set its
// fields, call Start once, then Follow; Current is safe to call from any
// goroutine meanwhile. It is a Followed Source.
type Follower struct {
	HTTP *HTTP
	// Refresh is the polling interval of a server that does not long-poll,
	// and the longest backoff after failures.
	Refresh time.Duration
	// Wait is the long-poll wait asked (Prefer: wait), at most MaxWait.
	Wait time.Duration
	// Cache, when set, is the file a taken CRL is written to (atomically,
	// mode 0644) and read from at start when the URL fails. The delta CRL
	// taken beside it, if any, is written to Cache+".delta" the same way,
	// and removed when a complete CRL replaces the one it is for.
	Cache string
	// StartAttempts is how many fetches Start tries before the cache.
	StartAttempts int
	// MinBackoff is the first retry delay after a failure; each next one
	// doubles, up to MaxBackoff, with jitter.
	MinBackoff time.Duration
	// MaxBackoff is the longest retry delay; it is never more than Refresh.
	MaxBackoff time.Duration

	// Now is the clock of Sink.Fetched; nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	current taken  // the CRL taken
	delta   []byte // the delta CRL taken beside current, nil for none
	held    Held   // the CRL last fetched, taken or not, by its Tag
	fromNet bool   // current came from the URL and is not in the cache yet
	// noBase is a delta refused: the next request asks for the complete CRL.
	noBase bool
	// cached is the SHA-256 of the CRL in the cache file, zero if unknown.
	cached [32]byte
	// fromCache is a Start that fell back on the cache.
	fromCache bool
	// started is the time of Start's good fetch, zero for none, told to
	// the sink of Follow.
	started time.Time
}

func (f *Follower) refresh() time.Duration {
	if f.Refresh <= 0 {
		return DefaultRefresh
	}
	return f.Refresh
}

func (f *Follower) wait() time.Duration {
	if f.Wait <= 0 {
		return DefaultWait
	}
	return min(f.Wait, MaxWait)
}

func (f *Follower) now() time.Time {
	if f.Now == nil {
		return time.Now()
	}
	return f.Now()
}

// taken is the CRL taken: its SHA-256 and tag always, its bytes only
// while the Follower holds them.
type taken struct {
	data []byte
	sum  [32]byte
	ok   bool
}

func takenOf(data []byte) taken {
	return taken{data: data, sum: sha256.Sum256(data), ok: true}
}

// ErrNotHeld is returned by Current when the Follower no longer holds the
// bytes of the CRL taken and can get them neither from its cache file nor
// from the URL, which now gives another CRL.
var ErrNotHeld = errors.New("the CRL taken is no longer held, and neither the cache nor the URL gives it")

// Current returns the CRL taken last. The Follower holds its bytes only
// until its user has judged them: from Start until Follow begins, and from
// a fetch until Sink.Changed returns. A CRL of a million entries is 50 MB
// that its user, which keeps what it parsed, does not need twice. After
// that Current reads them back from the cache file, or fetches them again
// (bounded as every fetch), and returns them if they are the same CRL
// (by SHA-256), else an error wrapping ErrNotHeld: a newer CRL is on its
// way to Sink.Changed. Sum tells whether they changed without them.
func (f *Follower) Current() ([]byte, error) {
	f.mu.Lock()
	cur := f.current
	f.mu.Unlock()
	switch {
	case !cur.ok:
		return nil, ErrNoCRL
	case cur.data != nil:
		return cur.data, nil
	}
	return f.again(cur.sum)
}

// Sum returns the SHA-256 of the bytes that Current returns, without
// them.
func (f *Follower) Sum() ([32]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.current.ok {
		return [32]byte{}, ErrNoCRL
	}
	return f.current.sum, nil
}

// Delta returns the delta CRL taken last beside the CRL of Current, nil for
// none, and the SHA-256 of that CRL (see DeltaSource). A delta CRL is small:
// the Follower keeps its bytes.
func (f *Follower) Delta() ([]byte, [32]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.delta, f.current.sum
}

// again gets back the bytes whose SHA-256 is sum: from the cache file,
// else from the URL.
func (f *Follower) again(sum [32]byte) ([]byte, error) {
	if f.Cache != "" {
		if data, err := regfile.ReadFile(f.Cache); err == nil && sha256.Sum256(data) == sum {
			return data, nil
		}
	}
	resp, err := f.HTTP.Fetch(context.Background(), Held{}, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotHeld, err)
	}
	if sha256.Sum256(resp.Data) != sum {
		return nil, fmt.Errorf("%w: %s gives a newer CRL", ErrNotHeld, f.HTTP.URL)
	}
	return resp.Data, nil
}

// letGo drops the bytes of the CRL taken, once they are judged and in the
// cache, and returns their memory to the system when they were large.
func (f *Follower) letGo() {
	f.mu.Lock()
	n := len(f.current.data)
	f.current.data = nil
	f.mu.Unlock()
	osmem.Release(n)
}

// Start gets the first CRL: from the URL (StartAttempts tries, a
// conditional GET against the cache file when there is one, asking for the
// complete CRL), else from the cache file. A CRL of the cache file, the
// URL's answer being 304 or none, comes with the delta CRL of its sibling
// file, if any. The caller judges them (through Current and Delta) before
// Follow. Each failure is told to failed, when it is set, with its reason:
// there is no Sink yet.
func (f *Follower) Start(ctx context.Context, failed func(reason string, err error)) error {
	if failed == nil {
		failed = func(string, error) {}
	}
	var cached, cachedDelta []byte
	if f.Cache != "" {
		cached = readCache(f.Cache, failed)
		if cached != nil {
			f.held = Held{Tag: Tag(cached)}
			cachedDelta = readCache(f.deltaCache(), failed)
		}
	}
	attempts := f.StartAttempts
	if attempts <= 0 {
		attempts = DefaultStartAttempts
	}
	var last error
	for i := range attempts {
		if i > 0 && !sleep(ctx, f.backoff(i)) {
			break
		}
		resp, err := f.HTTP.Fetch(ctx, f.held, 0)
		if err != nil {
			last = err
			failed(reasonOf(err), err)
			continue
		}
		if resp.NotModified && cached != nil {
			f.takeCached(cached, cachedDelta)
		} else if resp.NotModified {
			last = &FetchError{Reason: ReasonStatus, URL: f.HTTP.URL, Err: errors.New("server answered 304 to an unconditional request")}
			failed(ReasonStatus, last)
			continue
		} else {
			f.held = heldOf(resp)
			f.current, f.fromNet = takenOf(resp.Data), true
		}
		f.started = f.now()
		return nil
	}
	if cached != nil {
		f.takeCached(cached, cachedDelta)
		f.fromCache = true
		return nil
	}
	if last == nil {
		last = ctx.Err()
	}
	return fmt.Errorf("%w: %w", ErrNoCRL, last)
}

// readCache returns the bytes of the cache file path, nil when there is
// none; a failure to read it is told to failed.
func readCache(path string, failed func(reason string, err error)) []byte {
	data, err := regfile.ReadFile(path) // a FIFO would hang the start
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		failed(ReasonCache, fmt.Errorf("reading CRL cache %q: %w", path, err))
	}
	if err != nil {
		return nil
	}
	return data
}

// takeCached takes crl, the cache file's, with delta, its sibling's (nil
// for none): the delta is then what the Follower holds last.
func (f *Follower) takeCached(crl, delta []byte) {
	f.current, f.delta, f.cached = takenOf(crl), delta, sha256.Sum256(crl)
	if delta != nil {
		f.held = Held{Tag: Tag(delta)}
	}
}

// deltaCache is the file of the delta CRL beside the cache file.
func (f *Follower) deltaCache() string { return f.Cache + ".delta" }

// FromCache reports whether the CRL of Start came from the cache file.
func (f *Follower) FromCache() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fromCache
}

// Follow follows the URL until ctx is done: long polls when the server
// applies them, else polls every Refresh; retries failures with backoff.
// It tells sink of the fetch of Start first; the CRL of Start, if it came
// from the URL, is written to the cache then, and its bytes let go.
//
// A sink that is a DeltaSink is asked its Base at each request, sent as
// HeaderBase: the server may answer with a delta CRL, kept beside the
// complete CRL (Delta) and told to Changed; a complete CRL replaces both.
// When the sink refuses a delta, the next request sends no base, so that
// a sink that missed a step gets the complete CRL.
func (f *Follower) Follow(ctx context.Context, sink Sink) {
	if !f.started.IsZero() {
		sink.Fetched(f.started)
	}
	if f.fromNet {
		f.save(sink)
	}
	f.letGo()
	failures := 0
	for ctx.Err() == nil {
		f.mu.Lock()
		held, noBase := f.held, f.noBase
		f.mu.Unlock()
		if ds, ok := sink.(DeltaSink); ok && !noBase {
			held.Base = ds.Base()
		}
		start := time.Now()
		resp, err := f.HTTP.Fetch(ctx, held, f.wait())
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			sink.FetchFailed(reasonOf(err), err)
			failures++
			sleep(ctx, f.backoff(failures))
			continue
		}
		failures = 0
		waitApplied := resp.WaitApplied // resp, and the CRL in it, dead after take
		f.take(resp, sink)
		if waitApplied {
			sleep(ctx, minGap-time.Since(start))
		} else {
			sleep(ctx, f.refresh())
		}
	}
}

// heldOf is the Held of a fetched CRL: its tag, not its bytes.
func heldOf(resp *Response) Held {
	return Held{Tag: Tag(resp.Data), ETag: resp.ETag, LastModified: resp.LastModified}
}

// take handles a successful response: a 304 or the same bytes confirm the
// CRL; new bytes go to sink.Changed and, once taken, to the cache. A
// complete CRL replaces the one held and drops the delta, and its bytes
// are then let go; a delta CRL replaces the delta.
func (f *Follower) take(resp *Response, sink Sink) {
	f.mu.Lock()
	f.noBase = false
	if resp.NotModified || f.held.Tag != "" && Tag(resp.Data) == f.held.Tag {
		if resp.ETag != "" {
			f.held.ETag = resp.ETag
		}
		if !resp.LastModified.IsZero() {
			f.held.LastModified = resp.LastModified
		}
		f.mu.Unlock()
		sink.Fetched(f.now())
		return
	}
	f.held = heldOf(resp)
	if resp.Delta {
		prev := f.delta
		f.delta = resp.Data
		f.mu.Unlock()
		// A delta refused is dropped, and the complete CRL asked next.
		if f.changed(sink, func() { f.delta, f.noBase = prev, true }) {
			f.saveDelta(sink)
		}
		return
	}
	prev, prevDelta, size := f.current, f.delta, len(resp.Data)
	f.current, f.delta = takenOf(resp.Data), nil
	f.mu.Unlock()
	if !f.changed(sink, func() { f.current, f.delta = prev, prevDelta }) {
		osmem.Release(size) // the bytes refused
		return
	}
	f.mu.Lock()
	f.fromNet = true
	f.mu.Unlock()
	f.save(sink)
	f.letGo()
}

// changed tells sink of the new CRL and reports whether it took it: if
// not, undo (run under f.mu) puts back what was held, and the refusal is
// told to sink.FetchFailed with its reason.
func (f *Follower) changed(sink Sink, undo func()) bool {
	err := sink.Changed()
	if err == nil {
		sink.Fetched(f.now())
		return true
	}
	f.mu.Lock()
	undo()
	f.mu.Unlock()
	reason := ReasonRefused
	var r *Refusal
	if errors.As(err, &r) {
		reason = r.Reason
	}
	sink.FetchFailed(reason, &FetchError{Reason: reason, URL: f.HTTP.URL, Err: err})
	return false
}

// save writes the current CRL to the cache file, if there is one. The
// delta file goes first: a crash between the two leaves the previous CRL
// without its delta, never a delta beside a CRL it is not for.
func (f *Follower) save(sink Sink) {
	f.mu.Lock()
	data, sum := f.current.data, f.current.sum
	f.fromNet = false
	f.cached = [32]byte{}
	f.mu.Unlock()
	if f.Cache == "" || data == nil {
		return
	}
	if err := os.Remove(f.deltaCache()); err != nil && !errors.Is(err, os.ErrNotExist) {
		sink.FetchFailed(ReasonCache, fmt.Errorf("removing CRL cache %q: %w", f.deltaCache(), err))
		return
	}
	if err := atomicfile.WriteFile(f.Cache, data, 0o644); err != nil {
		sink.FetchFailed(ReasonCache, fmt.Errorf("writing CRL cache %q: %w", f.Cache, err))
		return
	}
	f.mu.Lock()
	f.cached = sum
	f.mu.Unlock()
}

// saveDelta writes the delta CRL to the delta file beside the cache file,
// if there is one and it holds the CRL the delta is for (a failed write of
// it left an older one there).
func (f *Follower) saveDelta(sink Sink) {
	f.mu.Lock()
	data, forCached := f.delta, f.cached == f.current.sum
	f.mu.Unlock()
	if f.Cache == "" || !forCached {
		return
	}
	if err := atomicfile.WriteFile(f.deltaCache(), data, 0o644); err != nil {
		sink.FetchFailed(ReasonCache, fmt.Errorf("writing CRL cache %q: %w", f.deltaCache(), err))
	}
}

// backoff is the delay before retry n (from 1): MinBackoff doubled n-1
// times, at most MaxBackoff and Refresh, less up to half of it at random
// so that replicas that failed together do not retry together.
func (f *Follower) backoff(n int) time.Duration {
	d := f.MinBackoff
	if d <= 0 {
		d = DefaultMinBackoff
	}
	limit := f.MaxBackoff
	if limit <= 0 {
		limit = DefaultMaxBackoff
	}
	limit = max(min(limit, f.refresh()), d)
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d - rand.N(d/2+1)
}

func reasonOf(err error) string {
	var fe *FetchError
	if errors.As(err, &fe) {
		return fe.Reason
	}
	return ReasonConnect
}

// sleep waits d or until ctx is done; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
