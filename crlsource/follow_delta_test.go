package crlsource_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"minica/crlsource"
	"minica/internal/crlserver"
)

// seen is what a deltaSink saw at a call of Changed: the complete CRL,
// the delta held beside it, and whether it took them.
type seen struct {
	crl, delta string
	took       bool
}

// deltaSink is a DeltaSink that answers Base with base and refuses the
// deltas refuse names.
type deltaSink struct {
	src     *crlsource.Follower
	mu      sync.Mutex
	base    string
	refuse  func(delta string) bool
	got     chan seen
	reasons []string
}

func (s *deltaSink) Base() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base
}

// Changed names the complete CRL by its Sum, as the proxy sees that it did
// not change: Current would fetch it again, its bytes let go.
func (s *deltaSink) Changed() error {
	sum, err := s.src.Sum()
	if err != nil {
		return err
	}
	delta, base := s.src.Delta()
	if base != sum {
		return errors.New("the delta is not held beside the CRL of Current")
	}
	sn := seen{crl: nameOf(sum), delta: string(delta)}
	sn.took = s.refuse == nil || !s.refuse(sn.delta)
	s.got <- sn
	if !sn.took {
		return &crlsource.Refusal{Reason: "older-number", Err: errors.New("replay")}
	}
	return nil
}

// nameOf names the complete CRL of the tests whose SHA-256 is sum.
func nameOf(sum [32]byte) string {
	for _, name := range []string{"c1", "c4", "c5"} {
		if sha256.Sum256([]byte(name)) == sum {
			return name
		}
	}
	return "?"
}

func (s *deltaSink) Fetched(time.Time) {}

func (s *deltaSink) FetchFailed(reason string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reasons = append(s.reasons, reason)
}

func (s *deltaSink) next(t *testing.T) seen {
	t.Helper()
	select {
	case sn := <-s.got:
		return sn
	case <-time.After(10 * time.Second):
		t.Fatal("Changed not called within 10s")
		return seen{}
	}
}

// startDelta starts a Follower of url for a deltaSink of base, caching in
// cache ("" for none), and follows until the test ends.
func startDelta(t *testing.T, url, cache, base string) (*crlsource.Follower, *deltaSink) {
	t.Helper()
	f := &crlsource.Follower{HTTP: &crlsource.HTTP{URL: url}, Refresh: time.Hour, Wait: 30 * time.Second,
		MinBackoff: 10 * time.Millisecond, StartAttempts: 1, Cache: cache}
	s := &deltaSink{src: f, base: base, got: make(chan seen, 8)}
	if err := f.Start(context.Background(), s.FetchFailed); err != nil {
		t.Fatalf("Start() = %v", err)
	}
	return f, s
}

// follow follows f for s until the test ends or stop is called.
func follow(t *testing.T, f *crlsource.Follower, s *deltaSink) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Follow(ctx, s); close(done) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// eventually waits up to 5s for cond, polling.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s", what)
		}
	}
}

// cacheHolds reports whether the cache files hold crl and delta ("" for
// no delta file).
func cacheHolds(cache, crl, delta string) bool {
	c, _ := os.ReadFile(cache)
	d, err := os.ReadFile(cache + ".delta")
	return string(c) == crl && string(d) == delta && (delta != "" || errors.Is(err, os.ErrNotExist))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("%s: mode %v; want 0644", filepath.Base(path), fi.Mode().Perm())
	}
	return string(data)
}

// A Follower asks with the sink's base and keeps each delta beside the
// complete CRL, in memory and in the cache; a complete CRL replaces both.
func TestFollowerDeltas(t *testing.T) {
	srv := &crlserver.Server{}
	srv.Set(crlserver.State{Complete: []byte("c1"), Number: 1})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	cache := filepath.Join(t.TempDir(), "crl.cache")
	f, s := startDelta(t, hs.URL, cache, "1")
	follow(t, f, s)
	for _, d := range []string{"d2", "d3"} {
		time.Sleep(50 * time.Millisecond) // let the long poll reach the server
		srv.Set(crlserver.State{Complete: []byte("c1"), Number: 1, Delta: []byte(d), DeltaNumber: int64(d[1] - '0'), DeltaBase: 1})
		if got := s.next(t); got != (seen{crl: "c1", delta: d, took: true}) {
			t.Fatalf("Changed saw %+v; want c1 with the delta %s", got, d)
		}
		eventually(t, "cache files of c1 and "+d, func() bool { return cacheHolds(cache, "c1", d) })
		readFile(t, cache+".delta") // its mode
	}
	if sum, err := f.Sum(); err != nil || sum != sha256.Sum256([]byte("c1")) {
		t.Fatalf("Sum() = %x, %v; want the complete CRL's", sum, err)
	}
	// The server's complete CRL passes the delta: it is answered alone.
	time.Sleep(50 * time.Millisecond)
	srv.Set(crlserver.State{Complete: []byte("c4"), Number: 4, Delta: []byte("d3"), DeltaNumber: 3, DeltaBase: 1})
	if got := s.next(t); got != (seen{crl: "c4", took: true}) {
		t.Fatalf("Changed saw %+v; want c4 without a delta", got)
	}
	if d, _ := f.Delta(); d != nil {
		t.Fatalf("Delta() = %q after a complete CRL; want nil", d)
	}
	eventually(t, "cache of c4, no delta file", func() bool { return cacheHolds(cache, "c4", "") })
	if b := srv.Bases(); b[0] != "" || !slices.Contains(b[1:], "1") || slices.Contains(b[1:], "") {
		t.Fatalf("bases sent = %q; want none at Start, then the sink's", b)
	}
}

// A delta the sink refuses is dropped, the previous one kept, and the next
// request asks for the complete CRL without a base; then deltas again.
func TestFollowerDeltaRefused(t *testing.T) {
	srv := &crlserver.Server{}
	srv.Set(crlserver.State{Complete: []byte("c1"), Number: 1, Delta: []byte("d2"), DeltaNumber: 2, DeltaBase: 1})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	f, s := startDelta(t, hs.URL, "", "1")
	refused := 0
	s.refuse = func(d string) bool {
		if d == "d2" && refused == 0 {
			refused++
			return true
		}
		return false
	}
	follow(t, f, s)
	want := []seen{{"c1", "d2", false}, {"c1", "", true}, {"c1", "d2", true}}
	for i, w := range want {
		if got := s.next(t); got != w {
			t.Fatalf("Changed %d saw %+v; want %+v", i+1, got, w)
		}
	}
	if b := srv.Bases(); len(b) < 4 || !slices.Equal(b[:4], []string{"", "1", "", "1"}) {
		t.Fatalf("bases sent = %q; want none at Start, 1, none after the refusal, then 1", b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Equal(s.reasons, []string{"older-number"}) {
		t.Fatalf("FetchFailed reasons = %q; want [older-number]", s.reasons)
	}
}

// A restart takes the delta of the cache with its CRL: alone while the
// URL is down, and when the URL answers 304 to the CRL; a newer complete
// CRL from the URL drops it.
func TestFollowerDeltaCacheRestart(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "crl.cache")
	for name, data := range map[string]string{cache: "c1", cache + ".delta": "d2"} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	held := func(f *crlsource.Follower) string {
		crl, err := f.Current()
		if err != nil {
			t.Fatal(err)
		}
		delta, base := f.Delta()
		if base != sha256.Sum256(crl) {
			t.Fatal("Delta() is not held beside Current()")
		}
		return string(crl) + "+" + string(delta)
	}

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	down := "http://" + ln.Addr().String() + "/crl.der"
	ln.Close()
	f, _ := startDelta(t, down, cache, "")
	if got := held(f); got != "c1+d2" || !f.FromCache() {
		t.Fatalf("Start() with the URL down holds %q, from cache %v; want c1+d2 from the cache", got, f.FromCache())
	}

	srv := &crlserver.Server{}
	srv.Set(crlserver.State{Complete: []byte("c1"), Number: 1, Delta: []byte("d2"), DeltaNumber: 2, DeltaBase: 1})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	f, s := startDelta(t, hs.URL, cache, "1")
	if got := held(f); got != "c1+d2" || f.FromCache() {
		t.Fatalf("Start() with the URL at c1 holds %q, from cache %v; want c1+d2, confirmed", got, f.FromCache())
	}
	// Following asks after d2: the next change is the next delta.
	stop := follow(t, f, s)
	time.Sleep(50 * time.Millisecond)
	srv.Set(crlserver.State{Complete: []byte("c1"), Number: 1, Delta: []byte("d3"), DeltaNumber: 3, DeltaBase: 1})
	if got := s.next(t); got != (seen{crl: "c1", delta: "d3", took: true}) {
		t.Fatalf("Changed saw %+v; want c1 with d3", got)
	}
	eventually(t, "cache files of c1 and d3", func() bool { return cacheHolds(cache, "c1", "d3") })
	stop()

	srv2 := &crlserver.Server{}
	srv2.Set(crlserver.State{Complete: []byte("c5"), Number: 5})
	hs2 := httptest.NewServer(srv2)
	t.Cleanup(hs2.Close)
	g, s2 := startDelta(t, hs2.URL, cache, "")
	if got := held(g); got != "c5+" {
		t.Fatalf("Start() with the URL at c5 holds %q; want c5 alone", got)
	}
	follow(t, g, s2)
	eventually(t, "cache of c5, no delta file", func() bool { return cacheHolds(cache, "c5", "") })
}
