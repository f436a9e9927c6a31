package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBodyTimeout checks BodyTimeout and BodyMinRate: a body that comes
// at a good rate goes through; one trickling a byte at a time, each pause
// shorter than BodyTimeout (an idle bound alone would never fire), falls
// behind BodyMinRate and is cut with 408, the upstream request cancelled.
func TestBodyTimeout(t *testing.T) {
	eachProtocol(t, "", func(t *testing.T, h2 bool) {
		upErr := make(chan error, 4)
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, err := io.Copy(io.Discard, r.Body)
			upErr <- err
			if err == nil {
				io.WriteString(w, strconv.FormatInt(n, 10))
			}
		}))
		defer up.Close()
		e := newEnv(t, func(c *Config) {
			c.Upstream = up.URL
			c.BodyTimeout = 200 * time.Millisecond
			c.BodyMinRate = 1000 // a byte earns a millisecond
		})
		cert, key := e.ca.Client(t, "alice")
		c := e.client(cert, key, h2)

		resp, err := c.Post(e.url("/"), "application/octet-stream", bytes.NewReader(make([]byte, 4<<20)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != strconv.Itoa(4<<20) {
			t.Fatalf("4 MiB body: got %d %q; want 200 %d", resp.StatusCode, body, 4<<20)
		}
		if err := <-upErr; err != nil {
			t.Fatalf("4 MiB body: upstream read error %v", err)
		}

		// 100 bytes, one per 50ms: 5s in all.
		pr, pw := io.Pipe()
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for range 100 {
				if _, err := pw.Write([]byte("x")); err != nil {
					return
				}
				select {
				case <-time.After(50 * time.Millisecond):
				case <-stop:
					pw.CloseWithError(io.ErrClosedPipe)
					return
				}
			}
			pw.Close()
		}()
		resp, err = c.Post(e.url("/"), "application/octet-stream", pr)
		if err != nil {
			t.Fatalf("trickling body: %v", err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || string(body) != "request body too slow\n" {
			t.Errorf("trickling body: got %d %q; want 408 request body too slow", resp.StatusCode, body)
		}
		select {
		case err := <-upErr:
			if err == nil {
				t.Error("trickling body: the upstream read the whole body")
			}
		case <-time.After(5 * time.Second):
			t.Error("trickling body: the upstream request was not cancelled")
		}
		e.waitLog("request ", "status=408", "reason=body-timeout")
	})
}

// TestWriteTimeout checks that a client that stops reading a large
// response is cut after WriteTimeout, and the upstream request with it:
// over HTTP/1.1 the socket stops taking bytes, over HTTP/2 the client
// stops opening its flow-control window. The request is logged with the
// reason write-timeout, whichever way it was forwarded: the direct way,
// or ReverseProxy (which takes a query with a ';', see queryKept).
func TestWriteTimeout(t *testing.T) {
	eachProtocol(t, "", func(t *testing.T, h2 bool) {
		for _, way := range []struct{ name, target string }{{"direct", "/direct"}, {"ReverseProxy", "/rp?a;b"}} {
			t.Run(way.name, func(t *testing.T) {
				const limit = 1 << 30
				written := make(chan int64, 1)
				up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					chunk := make([]byte, 32<<10)
					var n int64
					for n < limit {
						m, err := w.Write(chunk)
						n += int64(m)
						if err != nil {
							break
						}
					}
					written <- n
				}))
				defer up.Close()
				e := newEnv(t, func(c *Config) {
					c.Upstream = up.URL
					c.WriteTimeout = 200 * time.Millisecond
				})
				cert, key := e.ca.Client(t, "alice")
				c := e.client(cert, key, h2)
				c.Timeout = 0
				resp, err := c.Get(e.url(way.target))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				select {
				case n := <-written:
					if n >= limit {
						t.Fatalf("the upstream wrote all %d bytes to a client that reads none", n)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the upstream still writes, 10s after the client stopped reading")
				}
				if _, err := io.Copy(io.Discard, resp.Body); err == nil {
					t.Error("the client read a complete response; want it cut")
				}
				e.waitLog("request ", "uri="+way.target+" ", "status=200", "reason=write-timeout")
			})
		}
	})
}

// An upstream that answers before reading the body: the handler returns
// while the upstream Transport still copies the client's HTTP/2 body on its
// own goroutine, and the body's deadlines must then leave the finished
// ResponseWriter alone (under -race this caught a data race and a nil
// dereference in net/http's HTTP/2 server).
func TestBodyReadAfterHandlerReturned(t *testing.T) {
	e := newEnv(t, nil)
	cert, key := e.ca.Client(t, "alice")
	c := e.client(cert, key, true)
	for range 3 {
		pr, pw := io.Pipe()
		req, err := http.NewRequest("POST", e.url("/"), pr)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			chunk := bytes.Repeat([]byte("x"), 16<<10)
			for range 40 {
				if _, err := pw.Write(chunk); err != nil {
					return
				}
				time.Sleep(time.Millisecond)
			}
			pw.Close()
		}()
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "hello from upstream" {
			t.Fatalf("POST = %d %q; want 200 from the upstream", resp.StatusCode, body)
		}
		pr.Close()
	}
	// The proxy still answers: the stream's end did not take it down.
	if code, _ := e.get(c, "/", nil); code != http.StatusOK {
		t.Fatalf("GET after the early answers = %d; want 200", code)
	}
}

// An HTTP/1 upstream that answers before it has read the whole request
// body, as one that replies to a POST at once and then reads on, or one
// that refuses it (413) without reading it: the proxy goes on forwarding
// the body while it copies the answer, and the client gets the whole
// answer. net/http's server would otherwise take the rest of the body for
// itself once the answer's header is written, and close it under the
// upstream request, cutting the answer; and a body still read when the
// handler returns would race with the server's read of the next request.
func TestEarlyAnswerGetsTheWholeBody(t *testing.T) {
	const size = 200 << 10 // below net/http's 256 KiB drain limit
	refusal := strings.Repeat("too large ", 5000)
	tests := []struct {
		name     string
		upstream http.HandlerFunc
		n        int
		code     int
		want     string
	}{
		{name: "answer then read", n: 5, code: http.StatusOK, want: fmt.Sprintf("read %d bytes", size),
			upstream: func(w http.ResponseWriter, r *http.Request) {
				http.NewResponseController(w).EnableFullDuplex()
				w.WriteHeader(http.StatusOK)
				http.NewResponseController(w).Flush()
				buf := make([]byte, 4<<10)
				n := 0
				for {
					time.Sleep(100 * time.Microsecond) // a slow reader
					m, err := r.Body.Read(buf)
					n += m
					if err != nil {
						break
					}
				}
				fmt.Fprintf(w, "read %d bytes", n)
			}},
		{name: "refuse unread", n: 100, code: http.StatusRequestEntityTooLarge, want: refusal,
			upstream: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Connection", "close")
				w.WriteHeader(http.StatusRequestEntityTooLarge)
				w.Write([]byte(refusal))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.upstream.Config.Handler = tt.upstream
			cert, key := e.ca.Client(t, "alice")
			c := e.client(cert, key, false)
			for i := range tt.n {
				resp, err := c.Post(e.url("/"), "application/octet-stream", bytes.NewReader(bytes.Repeat([]byte("x"), size)))
				if err != nil {
					t.Fatalf("POST %d: %v\n%s", i, err, e.log.String())
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != tt.code || string(body) != tt.want {
					t.Fatalf("POST %d = %d, %d bytes (%v); want %d, %d bytes\n%s", i, resp.StatusCode, len(body), err, tt.code, len(tt.want), e.log.String())
				}
			}
		})
	}
}
