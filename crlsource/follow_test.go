package crlsource

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// crlServer serves one body at a time; with longPoll it holds a request
// whose If-None-Match is the current tag until the body changes or the
// asked wait ends, as `minica serve` does.
type crlServer struct {
	mu       sync.Mutex
	body     []byte
	changed  chan struct{}
	longPoll bool
	requests int
}

func newCRLServer(t *testing.T, body []byte, longPoll bool) (*crlServer, *httptest.Server) {
	s := &crlServer{body: body, changed: make(chan struct{}), longPoll: longPoll}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

// swap replaces the body without waking the long polls, as a server whose
// file changed under it would.
func (s *crlServer) swap(body []byte) {
	s.mu.Lock()
	s.body = body
	s.mu.Unlock()
}

func (s *crlServer) set(body []byte) {
	s.mu.Lock()
	s.body = body
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

func (s *crlServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	body, changed := s.body, s.changed
	s.mu.Unlock()
	if s.longPoll && r.Header.Get("Prefer") != "" {
		n, _ := strconv.Atoi(r.Header.Get("Prefer")[len("wait="):])
		w.Header().Set("Preference-Applied", "wait="+strconv.Itoa(n))
		if r.Header.Get("If-None-Match") == Tag(body) {
			select {
			case <-changed:
				s.mu.Lock()
				body = s.body
				s.mu.Unlock()
			case <-time.After(time.Duration(n) * time.Second):
			case <-r.Context().Done():
				return
			}
		}
	}
	if r.Header.Get("If-None-Match") == Tag(body) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Write(body)
}

// taker is the Sink of a Follower: it records the CRLs it is told of,
// refusing what refuse says, and the reasons of the failures (of Start
// too, as its failed).
type taker struct {
	mu      sync.Mutex
	src     Source
	got     chan []byte
	refuse  func([]byte) error
	reasons []string
}

func (tk *taker) Changed() error {
	data, err := tk.src.Current()
	if err == nil && tk.refuse != nil {
		err = tk.refuse(data)
	}
	tk.got <- data
	return err
}

func (tk *taker) Fetched(time.Time) {}

func (tk *taker) FetchFailed(reason string, err error) {
	tk.mu.Lock()
	tk.reasons = append(tk.reasons, reason)
	tk.mu.Unlock()
}

func newFollower(url string, tk *taker) *Follower {
	f := &Follower{HTTP: &HTTP{URL: url}, MinBackoff: 10 * time.Millisecond}
	tk.src = f
	return f
}

func next(t *testing.T, tk *taker) []byte {
	t.Helper()
	select {
	case d := <-tk.got:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no CRL handed to Changed within 10s")
		return nil
	}
}

func run(t *testing.T, f *Follower, tk *taker) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Follow(ctx, tk); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// Against a long-polling server a new CRL arrives at once, though Refresh
// is an hour.
func TestFollowerLongPoll(t *testing.T) {
	s, srv := newCRLServer(t, []byte("one"), true)
	tk := &taker{got: make(chan []byte, 4)}
	f := newFollower(srv.URL, tk)
	f.Refresh, f.Wait = time.Hour, 30*time.Second
	if err := f.Start(context.Background(), tk.FetchFailed); err != nil {
		t.Fatal(err)
	}
	run(t, f, tk)
	for _, v := range []string{"two", "three"} {
		time.Sleep(50 * time.Millisecond) // let the long poll reach the server
		s.set([]byte(v))
		if got := next(t, tk); string(got) != v {
			t.Fatalf("Changed got %q; want %q", got, v)
		}
		if cur, _ := f.Current(); string(cur) != v {
			t.Fatalf("Current() = %q; want %q", cur, v)
		}
	}
}

// A plain server is polled every Refresh with conditional requests.
func TestFollowerPolls(t *testing.T) {
	s, srv := newCRLServer(t, []byte("one"), false)
	tk := &taker{got: make(chan []byte, 4)}
	f := newFollower(srv.URL, tk)
	f.Refresh = 20 * time.Millisecond
	if err := f.Start(context.Background(), tk.FetchFailed); err != nil {
		t.Fatal(err)
	}
	run(t, f, tk)
	s.set([]byte("two"))
	if got := next(t, tk); string(got) != "two" {
		t.Fatalf("Changed got %q; want two", got)
	}
}

// A CRL that Changed refuses leaves Current at the previous one, and is
// reported with the reason of its error.
func TestFollowerRefusedKeepsPrevious(t *testing.T) {
	s, srv := newCRLServer(t, []byte("good"), true)
	tk := &taker{got: make(chan []byte, 4), refuse: func(d []byte) error {
		if string(d) == "replay" {
			return &Refusal{Reason: "older-number", Err: errors.New("lower")}
		}
		return nil
	}}
	f := newFollower(srv.URL, tk)
	f.Refresh = time.Hour
	if err := f.Start(context.Background(), tk.FetchFailed); err != nil {
		t.Fatal(err)
	}
	run(t, f, tk)
	time.Sleep(50 * time.Millisecond)
	s.set([]byte("replay"))
	next(t, tk)
	// FetchFailed is told after Changed returns.
	var reasons []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		tk.mu.Lock()
		reasons = append([]string(nil), tk.reasons...)
		tk.mu.Unlock()
		if len(reasons) > 0 {
			break
		}
	}
	if len(reasons) != 1 || reasons[0] != "older-number" {
		t.Fatalf("Failed reasons = %q; want [older-number]", reasons)
	}
	if sum, err := f.Sum(); err != nil || sum != sha256.Sum256([]byte("good")) {
		t.Fatalf("Sum() = %x, %v; want the previous CRL's", sum, err)
	}
	// Its bytes were let go, and the URL gives the refused CRL.
	if cur, err := f.Current(); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Current() = %q, %v; want ErrNotHeld", cur, err)
	}
}

// The bytes of the CRL taken are let go once judged; Current gives them
// again from the cache file, else from the URL, as long as they are the
// same CRL.
func TestFollowerCurrentAgain(t *testing.T) {
	s, srv := newCRLServer(t, []byte("one"), true)
	tk := &taker{got: make(chan []byte, 4)}
	f := newFollower(srv.URL, tk)
	f.Refresh, f.Cache = time.Hour, filepath.Join(t.TempDir(), "crl.cache")
	if err := f.Start(context.Background(), tk.FetchFailed); err != nil {
		t.Fatal(err)
	}
	run(t, f, tk)
	s.set([]byte("two"))
	next(t, tk)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		f.mu.Lock()
		held := f.current.data != nil
		f.mu.Unlock()
		if !held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the bytes of the CRL taken are still held 5s after Changed")
		}
	}
	if sum, err := f.Sum(); err != nil || sum != sha256.Sum256([]byte("two")) {
		t.Fatalf("Sum() = %x, %v; want the SHA-256 of two", sum, err)
	}
	// The URL moved on: only the cache file gives them.
	s.swap([]byte("three"))
	if cur, err := f.Current(); err != nil || string(cur) != "two" {
		t.Fatalf("Current() from the cache = %q, %v; want two", cur, err)
	}
	if err := os.Remove(f.Cache); err != nil {
		t.Fatal(err)
	}
	if cur, err := f.Current(); !errors.Is(err, ErrNotHeld) || !strings.Contains(err.Error(), "gives a newer CRL") {
		t.Fatalf("Current() without the cache, the URL moved on = %q, %v; want ErrNotHeld", cur, err)
	}
	// Without the cache, the URL gives the same CRL again.
	s.swap([]byte("two"))
	if cur, err := f.Current(); err != nil || string(cur) != "two" {
		t.Fatalf("Current() from the URL = %q, %v; want two", cur, err)
	}
}

// Failures are retried with backoff, and the next good CRL is taken.
func TestFollowerRetries(t *testing.T) {
	var mu sync.Mutex
	fails := 3
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if fails > 0 {
			fails--
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("two"))
	}))
	defer srv.Close()
	tk := &taker{got: make(chan []byte, 4)}
	f := newFollower(srv.URL, tk)
	f.Refresh, f.StartAttempts = time.Hour, 1
	f.current, f.held = takenOf([]byte("one")), Held{Tag: Tag([]byte("one"))}
	run(t, f, tk)
	if got := next(t, tk); string(got) != "two" {
		t.Fatalf("Changed got %q; want two", got)
	}
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if len(tk.reasons) != 3 || tk.reasons[0] != ReasonStatus {
		t.Fatalf("Failed reasons = %q; want 3 x http-status", tk.reasons)
	}
}

// While the URL fails, retries go out after 1 s, 2 s, 4 s, then every 5 s
// at most (never more than Refresh), each less a random part of up to
// half: a replica has the current CRL within seconds of serve's return,
// however long the outage, and replicas that failed together do not retry
// together.
func TestBackoff(t *testing.T) {
	s := time.Second
	tests := []struct {
		name string
		f    *Follower
		want []time.Duration // by retry, the last repeating
	}{
		{name: "defaults", f: &Follower{}, want: []time.Duration{s, 2 * s, 4 * s, 5 * s}},
		{name: "refresh 10s", f: &Follower{Refresh: 10 * s}, want: []time.Duration{s, 2 * s, 4 * s, 5 * s}},
		{name: "refresh 2s", f: &Follower{Refresh: 2 * s}, want: []time.Duration{s, 2 * s}},
		{name: "max backoff 3s", f: &Follower{MaxBackoff: 3 * s}, want: []time.Duration{s, 2 * s, 3 * s}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[time.Duration]bool{}
			for n := 1; n <= 1000; n++ {
				want := tt.want[min(n, len(tt.want))-1]
				got := tt.f.backoff(n)
				if got < want/2 || got > want {
					t.Fatalf("backoff(%d) = %s; want within [%s, %s]", n, got, want/2, want)
				}
				if n > len(tt.want) {
					seen[got] = true
				}
			}
			if len(seen) < 10 {
				t.Fatalf("backoff took %d values over 1000 retries; want jitter", len(seen))
			}
		})
	}
}

// The cache is written after a good fetch and serves a restart while the
// URL is down.
func TestFollowerCache(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "crl.cache")
	s, srv := newCRLServer(t, []byte("one"), true)
	tk := &taker{got: make(chan []byte, 4)}
	f := newFollower(srv.URL, tk)
	f.Cache, f.Refresh = cache, time.Hour
	if err := f.Start(context.Background(), tk.FetchFailed); err != nil || f.FromCache() {
		t.Fatalf("Start() = %v, from cache %v; want the URL's CRL", err, f.FromCache())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Follow(ctx, tk); close(done) }()
	time.Sleep(50 * time.Millisecond)
	s.set([]byte("two"))
	next(t, tk)
	cancel()
	<-done
	if data, err := os.ReadFile(cache); err != nil || string(data) != "two" {
		t.Fatalf("cache = %q, %v; want two", data, err)
	}
	if fi, _ := os.Stat(cache); fi.Mode().Perm() != 0o644 {
		t.Errorf("cache mode = %v; want 0644", fi.Mode().Perm())
	}

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	down := "http://" + ln.Addr().String() + "/crl.der"
	ln.Close()
	g := newFollower(down, tk)
	g.Cache, g.StartAttempts = cache, 2
	if err := g.Start(context.Background(), tk.FetchFailed); err != nil || !g.FromCache() {
		t.Fatalf("Start() with the URL down = %v, from cache %v; want the cache", err, g.FromCache())
	}
	if cur, _ := g.Current(); !bytes.Equal(cur, []byte("two")) {
		t.Fatalf("Current() = %q; want the cached CRL", cur)
	}
	// Without a cache, nothing to start from.
	h := newFollower(down, tk)
	h.StartAttempts = 1
	if err := h.Start(context.Background(), tk.FetchFailed); !errors.Is(err, ErrNoCRL) {
		t.Fatalf("Start() without cache = %v; want ErrNoCRL", err)
	}
}
