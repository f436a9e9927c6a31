package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"minica/serve/internal/etag"
)

// startPoll runs a request in the background and returns its recorder,
// delivered when the handler returns.
func (f *fixture) startPoll(t *testing.T, header ...string) <-chan *httptest.ResponseRecorder {
	t.Helper()
	return f.startPollCtx(t, context.Background(), header...)
}

func (f *fixture) startPollCtx(t *testing.T, ctx context.Context, header ...string) <-chan *httptest.ResponseRecorder {
	t.Helper()
	return f.startGet(t, ctx, "/crl.der", header...)
}

// startGet runs a GET of path in the background and returns its
// recorder, delivered when the handler returns.
func (f *fixture) startGet(t *testing.T, ctx context.Context, path string, header ...string) <-chan *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequestWithContext(ctx, "GET", path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(rec, req)
		done <- rec
	}()
	return done
}

func answer(t *testing.T, done <-chan *httptest.ResponseRecorder) *httptest.ResponseRecorder {
	t.Helper()
	select {
	case rec := <-done:
		return rec
	case <-time.After(5 * time.Second):
		t.Fatal("the long poll did not answer within 5s")
		return nil
	}
}

func pending(t *testing.T, done <-chan *httptest.ResponseRecorder) {
	t.Helper()
	select {
	case rec := <-done:
		t.Fatalf("the long poll answered %d at once; want it waiting", rec.Code)
	default:
	}
}

// A long poll with the current ETag waits, and answers 200 with the new
// CRL as soon as one is loaded; with an old ETag it answers at once; when
// its wait ends it answers 304; every answer says the wait it honoured.
func TestLongPoll(t *testing.T) {
	f := newFixture(t, nil)
	tag := f.do(t, "GET", "/crl.der").Header().Get("ETag")

	t.Run("old etag answers at once", func(t *testing.T) {
		rec := answer(t, f.startPoll(t, "If-None-Match", `"sha256:00"`, "Prefer", "wait=30"))
		if rec.Code != 200 || rec.Header().Get("Preference-Applied") != "wait=30" || rec.Header().Get("ETag") != tag {
			t.Fatalf("= %d, Preference-Applied %q; want 200 with the CRL, wait=30", rec.Code, rec.Header().Get("Preference-Applied"))
		}
	})
	t.Run("no Prefer answers 304 at once", func(t *testing.T) {
		rec := answer(t, f.startPoll(t, "If-None-Match", tag))
		if rec.Code != 304 || rec.Header().Get("Preference-Applied") != "" {
			t.Fatalf("= %d, Preference-Applied %q; want 304 without it", rec.Code, rec.Header().Get("Preference-Applied"))
		}
	})
	t.Run("wait ends with 304", func(t *testing.T) {
		done := f.startPoll(t, "If-None-Match", tag, "Prefer", "respond-async, wait=5")
		if d := f.timers.await(t); d != 5*time.Second {
			t.Fatalf("the poll waits %s; want 5s", d)
		}
		pending(t, done)
		f.timers.fireAll()
		rec := answer(t, done)
		if rec.Code != 304 || rec.Header().Get("Preference-Applied") != "wait=5" || rec.Header().Get("ETag") != tag {
			t.Fatalf("= %d, Preference-Applied %q, ETag %q; want 304, wait=5, %s", rec.Code, rec.Header().Get("Preference-Applied"), rec.Header().Get("ETag"), tag)
		}
	})
	t.Run("wait is bounded", func(t *testing.T) {
		done := f.startPoll(t, "If-None-Match", tag, "Prefer", "wait=3600")
		if d := f.timers.await(t); d != DefaultMaxWait {
			t.Fatalf("the poll waits %s; want %s", d, DefaultMaxWait)
		}
		f.timers.fireAll()
		if rec := answer(t, done); rec.Header().Get("Preference-Applied") != "wait=60" {
			t.Fatalf("Preference-Applied %q; want wait=60", rec.Header().Get("Preference-Applied"))
		}
	})
	t.Run("a new CRL wakes every poll", func(t *testing.T) {
		polls := []<-chan *httptest.ResponseRecorder{
			f.startPoll(t, "If-None-Match", tag, "Prefer", "wait=30"),
			f.startPoll(t, "If-None-Match", tag, "Prefer", "wait=30"),
		}
		f.timers.await(t)
		f.timers.await(t)
		for _, p := range polls {
			pending(t, p)
		}
		info := f.publishElsewhere(t)
		f.srv.check()
		for _, p := range polls {
			rec := answer(t, p)
			if rec.Code != 200 || rec.Header().Get("ETag") != etag.Of(info.DER) || rec.Body.String() != string(info.DER) ||
				rec.Header().Get("Preference-Applied") != "wait=30" {
				t.Fatalf("= %d, ETag %q, Preference-Applied %q; want 200 with the new CRL %s", rec.Code, rec.Header().Get("ETag"),
					rec.Header().Get("Preference-Applied"), etag.Of(info.DER))
			}
		}
		tag = etag.Of(info.DER)
	})
	t.Run("shutdown ends the polls", func(t *testing.T) {
		done := f.startPoll(t, "If-None-Match", tag, "Prefer", "wait=30")
		f.timers.await(t)
		if err := f.srv.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if rec := answer(t, done); rec.Code != 304 {
			t.Fatalf("= %d; want 304", rec.Code)
		}
	})
}

// Beyond MaxWaiters, a long poll is answered at once with
// Preference-Applied: wait=0; a poll whose client goes away stops waiting.
func TestLongPollBounded(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.MaxWaiters = 1 })
	etag := f.do(t, "GET", "/crl.der").Header().Get("ETag")
	ctx, cancel := context.WithCancel(context.Background())
	first := f.startPollCtx(t, ctx, "If-None-Match", etag, "Prefer", "wait=30")
	f.timers.await(t)
	rec := answer(t, f.startPoll(t, "If-None-Match", etag, "Prefer", "wait=30"))
	if rec.Code != 304 || rec.Header().Get("Preference-Applied") != "wait=0" {
		t.Fatalf("second poll = %d, %q; want 304 at once, wait=0", rec.Code, rec.Header().Get("Preference-Applied"))
	}
	if !hasLine(f.metrics(t), "minica_serve_long_polls 1") || !hasLine(f.metrics(t), "minica_serve_long_polls_refused_total 1") {
		t.Errorf("metrics:\n%s", f.metrics(t))
	}
	cancel()
	answer(t, first)
	if !hasLine(f.metrics(t), "minica_serve_long_polls 0") {
		t.Errorf("a gone client still counted as waiting:\n%s", f.metrics(t))
	}
	// The slot is free again.
	done := f.startPoll(t, "If-None-Match", etag, "Prefer", "wait=7")
	if d := f.timers.await(t); d != 7*time.Second {
		t.Fatalf("third poll waits %s; want 7s", d)
	}
	f.timers.fireAll()
	answer(t, done)
}

// preferWait reads RFC 7240's wait among other preferences.
func TestPreferWait(t *testing.T) {
	tests := []struct {
		header []string
		want   time.Duration
		ok     bool
	}{
		{nil, 0, false},
		{[]string{"wait=10"}, 10 * time.Second, true},
		{[]string{"WAIT = 10"}, 10 * time.Second, true},
		{[]string{`wait="10"`}, 10 * time.Second, true},
		{[]string{"respond-async, wait=7"}, 7 * time.Second, true},
		{[]string{"return=minimal", "wait=0"}, 0, true},
		{[]string{"wait=10; foo=bar"}, 10 * time.Second, true},
		{[]string{"wait=-1"}, 0, false},
		{[]string{"wait=abc"}, 0, false},
		{[]string{"wait"}, 0, false},
		{[]string{"waiting=5"}, 0, false},
		{[]string{"wait=99999999999999"}, 0, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		for _, v := range tt.header {
			h.Add("Prefer", v)
		}
		if got, ok := preferWait(h); got != tt.want || ok != tt.ok {
			t.Errorf("preferWait(%q) = %s, %t; want %s, %t", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}
