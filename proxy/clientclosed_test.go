package proxy

import (
	"context"
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
