package crlsource

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var crlBytes = []byte("\x30\x82 pretend CRL")

func TestTag(t *testing.T) {
	// SHA-256 of the DER, also when the copy held is PEM.
	der := []byte{0x30, 0x03, 0x02, 0x01, 0x01}
	pemData := []byte("-----BEGIN X509 CRL-----\nMAMCAQE=\n-----END X509 CRL-----\n")
	if got := Tag(der); !strings.HasPrefix(got, `"sha256:`) || len(got) != len(`"sha256:`)+64+1 {
		t.Fatalf("Tag() = %s; want \"sha256:<64 hex>\"", got)
	}
	if Tag(der) != Tag(pemData) {
		t.Fatalf("Tag(PEM) = %s; want Tag(DER) = %s", Tag(pemData), Tag(der))
	}
}

func poolOf(srv *httptest.Server) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return pool
}

func TestFetch(t *testing.T) {
	held := Held{Data: crlBytes, LastModified: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		held       Held
		limits     func(h *HTTP)
		wantReason string
		wantData   []byte
		want304    bool
		wantWait   bool
		wantDelta  bool
	}{
		{name: "200", handler: func(w http.ResponseWriter, r *http.Request) { w.Write(crlBytes) }, wantData: crlBytes},
		{name: "conditional 304", held: held, want304: true, handler: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("If-None-Match") != Tag(crlBytes) || r.Header.Get("If-Modified-Since") != "Wed, 02 Jan 2030 03:04:05 GMT" {
				http.Error(w, "conditions "+r.Header.Get("If-None-Match")+" "+r.Header.Get("If-Modified-Since"), 400)
				return
			}
			w.WriteHeader(http.StatusNotModified)
		}},
		{name: "server tag too", held: Held{Data: crlBytes, ETag: `"5f3c-1a"`}, want304: true, handler: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("If-None-Match") != Tag(crlBytes)+`, "5f3c-1a"` {
				http.Error(w, "conditions "+r.Header.Get("If-None-Match"), 400)
				return
			}
			w.WriteHeader(http.StatusNotModified)
		}},
		{name: "long poll applied", held: held, want304: true, wantWait: true, handler: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Prefer") != "wait=1" {
				http.Error(w, "prefer "+r.Header.Get("Prefer"), 400)
				return
			}
			w.Header().Set("Preference-Applied", "wait=1")
			w.WriteHeader(http.StatusNotModified)
		}},
		{name: "long poll refused", held: held, want304: true, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Preference-Applied", "wait=0")
			w.WriteHeader(http.StatusNotModified)
		}},
		{name: "delta asked and answered", held: Held{Data: crlBytes, Base: "7"}, wantData: crlBytes, wantDelta: true,
			handler: func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get(HeaderBase) != "7" {
					http.Error(w, "base "+r.Header.Get(HeaderBase), 400)
					return
				}
				w.Header().Set(HeaderDelta, "base=5")
				w.Write(crlBytes)
			}},
		{name: "no base, no delta asked", held: held, wantData: crlBytes, handler: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Values(HeaderBase) != nil {
				http.Error(w, "base sent", 400)
				return
			}
			w.Write(crlBytes)
		}},
		{name: "delta not asked for", held: held, wantReason: ReasonProtocol, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(HeaderDelta, "base=5")
			w.Write(crlBytes)
		}},
		{name: "delta header malformed", held: Held{Base: "7"}, wantReason: ReasonProtocol, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(HeaderDelta, "base=five")
			w.Write(crlBytes)
		}},
		{name: "delta header empty", held: Held{Base: "7"}, wantReason: ReasonProtocol, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(HeaderDelta, "")
			w.Write(crlBytes)
		}},
		{name: "404", wantReason: ReasonStatus, handler: http.NotFound},
		{name: "500", wantReason: ReasonStatus, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(500)
			io.WriteString(w, "<html><body>Internal Server Error</body></html>")
		}},
		{name: "headers never come", limits: func(h *HTTP) { h.HeaderTimeout = 200 * time.Millisecond }, wantReason: ReasonTimeout,
			handler: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }},
		{name: "body never ends", limits: func(h *HTTP) { h.BodyTimeout = 300 * time.Millisecond }, wantReason: ReasonTimeout,
			handler: func(w http.ResponseWriter, r *http.Request) {
				for r.Context().Err() == nil {
					w.Write([]byte{0x30})
					w.(http.Flusher).Flush()
					time.Sleep(10 * time.Millisecond)
				}
			}},
		{name: "body shorter than its length", wantReason: ReasonBody, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			w.Write(crlBytes)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}},
		{name: "announced too large", limits: func(h *HTTP) { h.MaxBytes = 10 }, wantReason: ReasonTooLarge, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "11")
			w.Write(bytes.Repeat([]byte{1}, 11))
		}},
		{name: "chunked too large", limits: func(h *HTTP) { h.MaxBytes = 10 }, wantReason: ReasonTooLarge, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Write(bytes.Repeat([]byte{1}, 6))
			w.(http.Flusher).Flush()
			w.Write(bytes.Repeat([]byte{1}, 6))
		}},
		{name: "at the limit", limits: func(h *HTTP) { h.MaxBytes = 10 }, wantData: bytes.Repeat([]byte{1}, 10), handler: func(w http.ResponseWriter, r *http.Request) {
			w.Write(bytes.Repeat([]byte{1}, 10))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			h := &HTTP{URL: srv.URL + "/crl.der"}
			if tt.limits != nil {
				tt.limits(h)
			}
			wait := time.Duration(0)
			if tt.wantWait {
				wait = time.Second
			}
			resp, err := h.Fetch(context.Background(), tt.held, wait)
			if tt.wantReason != "" {
				var fe *FetchError
				if !errors.As(err, &fe) || fe.Reason != tt.wantReason {
					t.Fatalf("Fetch() = %v, %v; want a FetchError with reason %q", resp, err, tt.wantReason)
				}
				if !strings.HasPrefix(err.Error(), `fetching CRL "`+h.URL+`": `) {
					t.Errorf("error = %q; want it to name the URL", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Fetch() error = %v", err)
			}
			if resp.NotModified != tt.want304 || !bytes.Equal(resp.Data, tt.wantData) || resp.WaitApplied != tt.wantWait || resp.Delta != tt.wantDelta {
				t.Fatalf("Fetch() = 304 %v, data %q, wait %v, delta %v; want %v, %q, %v, %v",
					resp.NotModified, resp.Data, resp.WaitApplied, resp.Delta, tt.want304, tt.wantData, tt.wantWait, tt.wantDelta)
			}
		})
	}
}

// A 100 MiB body, streamed without a length, is cut at the default limit.
func TestFetch100MiB(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 1<<20)
		for range 100 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	h := &HTTP{URL: srv.URL}
	_, err := h.Fetch(context.Background(), Held{}, 0)
	var fe *FetchError
	if !errors.As(err, &fe) || fe.Reason != ReasonTooLarge || !strings.Contains(err.Error(), "more than the limit of "+strconv.Itoa(DefaultMaxBytes)+" bytes") {
		t.Fatalf("Fetch() error = %v; want too-large at %d bytes", err, DefaultMaxBytes)
	}
}

func TestFetchTransportFailures(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(crlBytes) }))
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(crlBytes) }))
	defer plain.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/crl.der"
	ln.Close()
	tests := []struct {
		name, url  string
		wantReason string
		wantErr    string
	}{
		{name: "https not verified by the system roots", url: tlsSrv.URL, wantReason: ReasonTLS, wantErr: "certificate"},
		{name: "https to a plain server", url: strings.Replace(plain.URL, "http:", "https:", 1), wantReason: ReasonTLS},
		{name: "nothing listening", url: closed, wantReason: ReasonConnect, wantErr: "connection refused"},
		{name: "not http", url: "ftp://example.com/crl.der", wantReason: ReasonRequest, wantErr: "not an http or https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &HTTP{URL: tt.url}
			_, err := h.Fetch(context.Background(), Held{}, 0)
			var fe *FetchError
			if !errors.As(err, &fe) || fe.Reason != tt.wantReason || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Fetch() error = %v; want reason %q containing %q", err, tt.wantReason, tt.wantErr)
			}
		})
	}
	// Verified against the server's CA, the same server works.
	h := &HTTP{URL: tlsSrv.URL, RootCAs: poolOf(tlsSrv)}
	if resp, err := h.Fetch(context.Background(), Held{}, 0); err != nil || !bytes.Equal(resp.Data, crlBytes) {
		t.Fatalf("Fetch() with RootCAs = %v, %v; want the CRL", resp, err)
	}
}

// An endless chunked body is cut at MaxBytes, and the retries that follow
// read it again into the buffer of the first: the bytes allocated over six
// fetches stay under twice the limit (io.ReadAll allocated about twice the
// limit at every fetch, and a replica's retries drove it to hundreds of MB).
func TestFetchEndlessBodyReusesOneBuffer(t *testing.T) {
	const limit = 4 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte{0x30}, 32<<10)
		// Endless for the client: it hangs up long before 64 times the limit.
		for range 64 * limit / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	h := &HTTP{URL: srv.URL, MaxBytes: limit}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 6 {
		_, err := h.Fetch(context.Background(), Held{}, 0)
		var fe *FetchError
		if !errors.As(err, &fe) || fe.Reason != ReasonTooLarge {
			t.Fatalf("fetch %d: error = %v; want too-large", i+1, err)
		}
	}
	runtime.ReadMemStats(&after)
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d bytes", got)
	if got >= 2*limit {
		t.Fatalf("6 fetches of an endless body allocated %d bytes; want less than twice the limit of %d", got, limit)
	}
}

// The data of a fetch is the caller's: later fetches, which reuse the
// buffer it was read into, leave it as it was.
func TestFetchDataOutlivesTheBuffer(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte{byte('a' + n.Add(1))}, 100<<10))
	}))
	defer srv.Close()
	h := &HTTP{URL: srv.URL}
	first, err := h.Fetch(context.Background(), Held{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(first.Data)
	if _, err := h.Fetch(context.Background(), Held{}, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Data, want) || len(want) != 100<<10 {
		t.Fatalf("the data of the first fetch changed with the second (%d bytes)", len(first.Data))
	}
}
