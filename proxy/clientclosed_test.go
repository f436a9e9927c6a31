package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// TestClientClosed: a client that goes away before the upstream answered,
// waiting for the answer or in the middle of its request body (it cancels,
// which resets its HTTP/2 stream or closes its HTTP/1.1 connection, as
// h2spec does), is logged with status 499 and reason client-closed, as
// nginx logs it, and counted under code 499: not as a 502, nor as a
// refusal.
func TestClientClosed(t *testing.T) {
	arrived := make(chan string, 16)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadFull(r.Body, make([]byte, 5)) // the first part of a body, if any
		arrived <- r.URL.Path
		// Until the proxy cancels the upstream request: the context ends,
		// or the rest of the body fails.
		read := make(chan struct{})
		if strings.HasSuffix(r.URL.Path, "-body") {
			go func() { io.Copy(io.Discard, r.Body); close(read) }()
		}
		select {
		case <-r.Context().Done():
		case <-read:
		}
	}))
	t.Cleanup(up.Close)
	e := newEnv(t, func(c *Config) { c.Upstream = up.URL })
	cert, key := e.ca.Client(t, "alice")
	n := 0
	eachProtocol(t, "", func(t *testing.T, h2 bool) {
		c := e.client(cert, key, h2)
		for _, withBody := range []bool{false, true} {
			path := "/" + strings.ReplaceAll(t.Name(), "/", "-")
			var body io.Reader
			var pw *io.PipeWriter
			if withBody {
				path += "-body"
				body, pw = io.Pipe()
				go pw.Write([]byte("hello")) // and no more: the body stays open
			}
			ctx, cancel := context.WithCancel(context.Background())
			req, err := http.NewRequestWithContext(ctx, "POST", e.url(path), body)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				resp, err := c.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				done <- err
			}()
			if got := <-arrived; got != path {
				t.Fatalf("the upstream got %s; want %s", got, path)
			}
			cancel()
			if pw != nil {
				pw.CloseWithError(context.Canceled) // the client's transport waits for its body
			}
			if err := <-done; err == nil {
				t.Fatalf("POST %s: no error after cancelling it", path)
			}
			e.waitLog("request ", "uri="+path+" ", "status=499 reason="+ReasonClientClosed+" ")
			n++
		}
	})
	var m strings.Builder
	e.p.writeMetrics(&m)
	if want := `minica_proxy_requests_total{code="499"} ` + strconv.Itoa(n) + "\n"; !strings.Contains(m.String(), want) {
		t.Errorf("metrics lack %q:\n%s", want, m.String())
	}
	for _, bad := range []string{`code="502"`, `reason="` + ReasonClientClosed + `"`} {
		if strings.Contains(m.String(), bad) {
			t.Errorf("metrics have %s:\n%s", bad, m.String())
		}
	}
	if strings.Contains(e.log.String(), "status=502") {
		t.Errorf("a request logged as a 502:\n%s", e.log.String())
	}
}

// TestClientClosedBody: a failed read of the request body is the client's
// going away even before the request's context ends (over HTTP/2 the
// stream's body fails first); its end and a deadline are not.
func TestClientClosedBody(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"reset", errors.New("client disconnected"), true},
		{"cut short", io.ErrUnexpectedEOF, true},
		{"end", io.EOF, false},
		{"deadline", os.ErrDeadlineExceeded, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", iotest.ErrReader(tt.err))
			rec := httptest.NewRecorder()
			b := &timedBody{ReadCloser: io.NopCloser(r.Body), rc: http.NewResponseController(rec), budget: time.Minute, max: time.Minute, rate: 1}
			r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, b))
			b.Read(make([]byte, 1))
			if got := clientClosed(r); got != tt.want {
				t.Errorf("clientClosed() after a body read failing with %v = %v; want %v", tt.err, got, tt.want)
			}
		})
	}
	if clientClosed(nil) || clientClosed(httptest.NewRequest("GET", "/", nil)) {
		t.Error("clientClosed() of a request whose client is there = true")
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
// the client connection while the first is forwarded: it ends nothing,
// and both are answered in order.
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
