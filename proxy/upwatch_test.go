package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// cutCounter is the cut of a watch that counts its runs.
type cutCounter struct{ n atomic.Int32 }

func (c *cutCounter) cut() { c.n.Add(1) }

// waitCuts waits up to closeWait for c to have run n times, and checks
// that it ran no more.
func (c *cutCounter) waitCuts(t *testing.T, n int32) {
	t.Helper()
	deadline := time.Now().Add(closeWait)
	for c.n.Load() < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := c.n.Load(); got != n {
		t.Fatalf("cut ran %d times; want %d", got, n)
	}
}

func TestUpstreamWatch(t *testing.T) {
	t.Run("a request that ends quietly is never cut", func(t *testing.T) {
		var w upstreamWatch
		var c cutCounter
		if !w.watch(context.Background(), c.cut) {
			t.Fatal("watch of a live context = false")
		}
		if !w.unwatch() || w.active.Load() {
			t.Fatal("unwatch = false, or still active; want the connection reusable")
		}
		c.waitCuts(t, 0)
	})
	t.Run("a context that ended unseen: the connection is not reused", func(t *testing.T) {
		// The race of upstreamWatch's doc: no event on the client
		// connection, so no AfterFunc, yet the context ended (send then
		// cuts the upstream connection itself).
		var w upstreamWatch
		var c cutCounter
		ctx, cancel := context.WithCancel(context.Background())
		w.watch(ctx, c.cut)
		cancel()
		if w.unwatch() {
			t.Fatal("unwatch after the context ended = true; want the connection dropped")
		}
		c.waitCuts(t, 0)
	})
	t.Run("an ended context is not watched", func(t *testing.T) {
		var w upstreamWatch
		var c cutCounter
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if w.watch(ctx, c.cut) || w.active.Load() {
			t.Fatal("watch of an ended context = true, or left active")
		}
		c.waitCuts(t, 0)
	})
	t.Run("bytes from the client: cut when, and only when, the context ends", func(t *testing.T) {
		var w upstreamWatch
		var c cutCounter
		ctx, cancel := context.WithCancel(context.Background())
		w.watch(ctx, c.cut)
		w.heard()
		w.heard()
		c.waitCuts(t, 0)
		cancel()
		c.waitCuts(t, 1)
		if w.unwatch() {
			t.Error("unwatch after the cut = true; want the connection dropped")
		}
	})
	t.Run("a connection that failed before the watch", func(t *testing.T) {
		var w upstreamWatch
		var c cutCounter
		w.failed()
		ctx, cancel := context.WithCancel(context.Background())
		if !w.watch(ctx, c.cut) {
			t.Fatal("watch = false before the context ended")
		}
		c.waitCuts(t, 0)
		cancel()
		c.waitCuts(t, 1)
		if w.unwatch() {
			t.Error("unwatch after the cut = true")
		}
	})
	t.Run("an earlier request's context cuts nothing of a later one", func(t *testing.T) {
		var w upstreamWatch
		var first, second cutCounter
		ctx1, cancel1 := context.WithCancel(context.Background())
		w.watch(ctx1, first.cut)
		w.heard()
		if !w.unwatch() {
			t.Fatal("unwatch before the context ended = false")
		}
		w.watch(context.Background(), second.cut)
		cancel1()
		first.waitCuts(t, 0)
		second.waitCuts(t, 0)
		if !w.unwatch() {
			t.Error("unwatch of the second request = false")
		}
	})
}

// clientConn tells its watch what happens on the socket: bytes or a
// timeout hand the request to its context, a failed read or a close
// marks the connection dead.
func TestClientConnTellsTheWatch(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	cc := &clientConn{lazyConn: newLazyConn(a)}
	var c cutCounter
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cc.up.watch(ctx, c.cut)
	go b.Write([]byte("x"))
	if _, err := cc.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	cc.up.mu.Lock()
	handed := cc.up.stop != nil
	cc.up.mu.Unlock()
	if !handed {
		t.Fatal("a read that returned bytes left the watch without an AfterFunc")
	}
	c.waitCuts(t, 0)
	cancel()
	c.waitCuts(t, 1)
	cc.up.unwatch()

	b.Close()
	if _, err := cc.Read(make([]byte, 1)); err == nil {
		t.Fatal("read after the peer closed: no error")
	}
	cc.up.mu.Lock()
	dead := cc.up.dead
	cc.up.mu.Unlock()
	if !dead {
		t.Error("a failed read left the connection alive for the watch")
	}
}

// A client that goes away while its HTTP/1.1 request waits for the
// upstream (the direct way) ends the upstream's side at once, however it
// goes: its TCP connection closed without a TLS close_notify, with one,
// or a close_notify alone on a connection left open. It is logged as
// client-closed.
func TestClientGoneEndsTheUpstreamRequest(t *testing.T) {
	started, ended := make(chan string, 4), make(chan string, 4)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- r.URL.Path
		<-r.Context().Done() // the proxy closed its upstream connection
		ended <- r.URL.Path
	}))
	defer up.Close()
	e := newEnv(t, func(c *Config) { c.Upstream = up.URL })
	cert, key := e.ca.Client(t, "alice")
	for _, tt := range []struct {
		name string
		gone func(*tls.Conn)
	}{
		{"tcp-close", func(c *tls.Conn) { c.NetConn().Close() }},
		{"close-notify-and-close", func(c *tls.Conn) { c.Close() }},
		{"close-notify-only", func(c *tls.Conn) { c.CloseWrite() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := e.dialHTTP1(t, cert, key)
			io.WriteString(c, "GET /"+tt.name+" HTTP/1.1\r\nHost: localhost\r\n\r\n")
			if got := receive(t, started); got != "/"+tt.name {
				t.Fatalf("the upstream got %s", got)
			}
			tt.gone(c)
			if got := receive(t, ended); got != "/"+tt.name {
				t.Fatalf("the upstream's request that ended is %s", got)
			}
			e.waitLog("request ", "uri=/"+tt.name+" ", "status=499 reason="+ReasonClientClosed+" ")
		})
	}
}

// receive returns the next value of ch, failing after closeWait.
func receive(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(closeWait):
		t.Fatal("nothing came within", closeWait)
		return ""
	}
}

// A request pipelined behind one that waits for the upstream is bytes on
// the client connection during a watch: it ends nothing, and both are
// answered in order.
func TestPipelinedRequestEndsNothing(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-release:
			case <-r.Context().Done():
				http.Error(w, "cut", http.StatusInternalServerError)
				return
			}
		}
		io.WriteString(w, r.URL.Path)
	}))
	defer up.Close()
	e := newEnv(t, func(c *Config) { c.Upstream = up.URL })
	cert, key := e.ca.Client(t, "alice")
	c := e.dialHTTP1(t, cert, key)
	c.SetDeadline(time.Now().Add(closeWait))
	io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n")
	time.Sleep(20 * time.Millisecond) // most often, the first waits upstream now
	io.WriteString(c, "GET /fast HTTP/1.1\r\nHost: localhost\r\n\r\n")
	time.Sleep(20 * time.Millisecond) // and the proxy has read the second
	close(release)
	br := bufio.NewReader(c)
	for _, want := range []string{"/slow", "/fast"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("reading the answer to %s: %v\n%s", want, err, e.log.String())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != want {
			t.Errorf("answer to %s: %d %q", want, resp.StatusCode, body)
		}
	}
	if strings.Contains(e.log.String(), "status=499") {
		t.Errorf("a request logged as client-closed:\n%s", e.log.String())
	}
}
