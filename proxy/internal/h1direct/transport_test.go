package h1direct

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// scripted is an upstream that runs serve on each connection it accepts
// and counts them.
type scripted struct {
	addr     string
	accepted atomic.Int32
}

func newScripted(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) *scripted {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scripted{addr: ln.Addr().String()}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				serve(c, bufio.NewReader(c))
			}()
		}
	}()
	return s
}

// readReq reads one request from br, or reports false.
func readReq(br *bufio.Reader) (*http.Request, bool) {
	r, err := http.ReadRequest(br)
	if err != nil {
		return nil, false
	}
	io.Copy(io.Discard, r.Body)
	return r, true
}

// answers serves each request it reads with the next of answers, then
// stops (closing the connection).
func answers(answers ...string) func(net.Conn, *bufio.Reader) {
	return func(c net.Conn, br *bufio.Reader) {
		for _, a := range answers {
			if _, ok := readReq(br); !ok {
				return
			}
			io.WriteString(c, a)
		}
	}
}

// countingRT is the Transport behind, counting what it is handed.
type countingRT struct{ n atomic.Int32 }

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return &http.Response{StatusCode: 299, Body: http.NoBody, Request: r}, nil
}

func testH1(next http.RoundTripper, headerTimeout time.Duration) *Transport {
	tr := &http.Transport{DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		ResponseHeaderTimeout: headerTimeout, IdleConnTimeout: time.Minute, MaxIdleConns: 8, MaxIdleConnsPerHost: 4,
		MaxResponseHeaderBytes: 4096}
	t := NewTransport(tr, nil)
	if next != nil {
		t.next = next
	}
	return t
}

// get sends GET path through t and returns the status and body, or the error.
func h1Get(ctx context.Context, t *Transport, addr, path string, hdr http.Header) (int, string, error) {
	r, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+path, nil)
	for k, v := range hdr {
		r.Header[k] = v
	}
	resp, err := t.RoundTrip(r)
	if err != nil {
		return 0, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b), err
}

const okAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

func TestH1TransportReusesAndDiscards(t *testing.T) {
	tests := []struct {
		name    string
		serve   func(net.Conn, *bufio.Reader)
		want    []string // bodies of three GETs in a row
		wantErr string   // of the first GET, if any
		conns   int32
	}{
		{name: "keep-alive: one connection", serve: answers(okAnswer, okAnswer, okAnswer),
			want: []string{"ok", "ok", "ok"}, conns: 1},
		{name: "chunked and trailers", serve: answers(
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n2\r\nok\r\n0\r\nX-T: 1\r\n\r\n", okAnswer, okAnswer),
			want: []string{"ok", "ok", "ok"}, conns: 1},
		{name: "upstream closes after each answer", serve: answers(okAnswer),
			want: []string{"ok", "ok", "ok"}, conns: 3},
		{name: "Connection: close is not reused", serve: answers("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", okAnswer),
			want: []string{"ok", "ok", "ok"}, conns: 3},
		// Two answers to one request: the second must not become the
		// answer of the next request.
		{name: "bytes beyond the answer", serve: answers(okAnswer + "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"),
			want: []string{"ok", "ok", "ok"}, conns: 3},
		{name: "bytes sent while idle", serve: func(c net.Conn, br *bufio.Reader) {
			if _, ok := readReq(br); ok {
				io.WriteString(c, okAnswer)
				time.Sleep(50 * time.Millisecond)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray")
				io.Copy(io.Discard, br)
			}
		}, want: []string{"ok", "ok"}, conns: 2},
		{name: "early hints pass", serve: answers("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + okAnswer),
			want: []string{"ok"}, conns: 1},
		{name: "too many informational answers", serve: answers(strings.Repeat("HTTP/1.1 103 Early Hints\r\n\r\n", 6) + okAnswer),
			wantErr: "too many informational responses"},
		{name: "response header over the limit", serve: answers("HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("b", 5000) + "\r\nContent-Length: 2\r\n\r\nok"),
			wantErr: "upstream response header too long"},
		{name: "switching protocols unasked", serve: answers("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n"),
			wantErr: "switched protocols"},
		{name: "malformed answer", serve: answers("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\nok"),
			wantErr: "Content-Length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newScripted(t, tt.serve)
			h := testH1(nil, 5*time.Second)
			defer h.CloseIdleConnections()
			if tt.wantErr != "" {
				_, _, err := h1Get(context.Background(), h, up.addr, "/", nil)
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("GET error = %v; want containing %q", err, tt.wantErr)
				}
				return
			}
			for i, want := range tt.want {
				if i > 0 && strings.Contains(tt.name, "idle") {
					time.Sleep(100 * time.Millisecond) // let the stray bytes come
				}
				code, body, err := h1Get(context.Background(), h, up.addr, "/", nil)
				if err != nil || code != 200 || body != want {
					t.Fatalf("GET %d = %d %q, %v; want 200 %q", i+1, code, body, err, want)
				}
			}
			if n := up.accepted.Load(); n != tt.conns {
				t.Errorf("upstream connections = %d; want %d", n, tt.conns)
			}
		})
	}
}

func TestH1TransportHandsOn(t *testing.T) {
	next := &countingRT{}
	h := testH1(next, time.Second)
	for _, tt := range []struct {
		name string
		req  func() *http.Request
	}{
		{"body", func() *http.Request {
			r, _ := http.NewRequest("POST", "http://127.0.0.1:1/", strings.NewReader("x"))
			return r
		}},
		{"upgrade", func() *http.Request {
			r, _ := http.NewRequest("GET", "http://127.0.0.1:1/", nil)
			r.Header.Set("Connection", "Upgrade")
			r.Header.Set("Upgrade", "websocket")
			return r
		}},
		{"https", func() *http.Request {
			r, _ := http.NewRequest("GET", "https://127.0.0.1:1/", nil)
			return r
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := next.n.Load()
			resp, err := h.RoundTrip(tt.req())
			if err != nil || resp.StatusCode != 299 || next.n.Load() != before+1 {
				t.Fatalf("RoundTrip = %v, %v; want the Transport behind's 299", resp, err)
			}
		})
	}
}

func TestH1TransportChecksHeaders(t *testing.T) {
	up := newScripted(t, answers(okAnswer))
	h := testH1(nil, time.Second)
	for _, hdr := range []http.Header{{"X-A": {"a\x01b"}}, {"X-A": {"a\x7fb"}}, {"X A": {"a"}}, {"X-A": {"a\r\nX-B: b"}}} {
		if _, _, err := h1Get(context.Background(), h, up.addr, "/", hdr); err == nil || !strings.Contains(err.Error(), "invalid header field") {
			t.Errorf("header %q: error = %v; want invalid header field", hdr, err)
		}
	}
	if n := up.accepted.Load(); n != 0 {
		t.Errorf("upstream connections = %d; want 0", n)
	}
}

func TestH1TransportTimeoutsAndCancel(t *testing.T) {
	t.Run("response header timeout, not retried", func(t *testing.T) {
		up := newScripted(t, func(c net.Conn, br *bufio.Reader) {
			if _, ok := readReq(br); ok {
				io.WriteString(c, okAnswer)
			}
			readReq(br) // then never answers
			io.Copy(io.Discard, br)
		})
		h := testH1(nil, 200*time.Millisecond)
		if _, _, err := h1Get(context.Background(), h, up.addr, "/", nil); err != nil {
			t.Fatal(err)
		}
		_, _, err := h1Get(context.Background(), h, up.addr, "/", nil)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("error = %v; want a timeout", err)
		}
		if n := up.accepted.Load(); n != 1 {
			t.Errorf("upstream connections = %d; want 1 (no retry after a timeout)", n)
		}
	})
	t.Run("cancel while the body streams", func(t *testing.T) {
		up := newScripted(t, func(c net.Conn, br *bufio.Reader) {
			if _, ok := readReq(br); ok {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart")
			}
			io.Copy(io.Discard, br)
		})
		h := testH1(nil, time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		r, _ := http.NewRequestWithContext(ctx, "GET", "http://"+up.addr+"/", nil)
		resp, err := h.RoundTrip(r)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4)
		if _, err := io.ReadFull(resp.Body, b); err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		if _, err := io.ReadAll(resp.Body); err == nil {
			t.Fatal("body read after cancel: no error")
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("body read ended %v after cancel", d)
		}
		resp.Body.Close()
		if n := len(h.idle[hostPort(up.addr)]); n != 0 {
			t.Errorf("idle connections = %d; want 0", n)
		}
	})
	t.Run("cancel before the answer", func(t *testing.T) {
		up := newScripted(t, func(c net.Conn, br *bufio.Reader) { io.Copy(io.Discard, br) })
		h := testH1(nil, 0)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, _, err := h1Get(ctx, h, up.addr, "/", nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error = %v; want %v", err, context.DeadlineExceeded)
		}
	})
}

func TestH1TransportEarlyHintsReachTrace(t *testing.T) {
	up := newScripted(t, answers("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"+okAnswer))
	h := testH1(nil, time.Second)
	var got []string
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		Got1xxResponse: func(code int, hdr textproto.MIMEHeader) error {
			got = append(got, http.StatusText(code)+" "+hdr.Get("Link"))
			return nil
		},
	})
	if _, body, err := h1Get(ctx, h, up.addr, "/", nil); err != nil || body != "ok" {
		t.Fatalf("GET = %q, %v", body, err)
	}
	if len(got) != 1 || got[0] != "Early Hints </a>" {
		t.Errorf("1xx seen = %q; want [Early Hints </a>]", got)
	}
}

// A connection whose answer's response header timeout passed while it was
// idle is still reused: the timeout was that answer's, not the
// connection's fault.
func TestH1TransportReusesAfterHeaderTimeoutPassedIdle(t *testing.T) {
	up := newScripted(t, answers(okAnswer, okAnswer))
	h := testH1(nil, 50*time.Millisecond)
	defer h.CloseIdleConnections()
	for i := range 2 {
		if i > 0 {
			time.Sleep(150 * time.Millisecond)
		}
		if code, body, err := h1Get(context.Background(), h, up.addr, "/", nil); err != nil || code != 200 || body != "ok" {
			t.Fatalf("GET %d = %d %q, %v; want 200 \"ok\"", i+1, code, body, err)
		}
	}
	if n := up.accepted.Load(); n != 1 {
		t.Errorf("upstream connections = %d; want 1", n)
	}
}
