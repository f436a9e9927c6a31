package ocsp

import (
	"bufio"
	"bytes"
	"crypto"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	xocsp "golang.org/x/crypto/ocsp"
)

// POST bodies of every shape: a declared length read exactly, a body that
// ends before its declared length, a chunked one (no length), and bodies
// over MaxRequest either way.
func TestOCSPPostBodies(t *testing.T) {
	c, signer, _ := newTestCA(t)
	alice := issue(t, c, signer, "alice")
	r := newTestResponder(t, Config{CA: c, Signer: signer})
	good := request(t, alice, c.Cert, crypto.SHA1)
	big := append(slices.Clone(good), make([]byte, MaxRequest)...)
	tests := []struct {
		name   string
		body   []byte
		length int64 // the declared Content-Length; -1 chunked
		good   bool
	}{
		{name: "declared length", body: good, length: int64(len(good)), good: true},
		{name: "chunked", body: good, length: -1, good: true},
		{name: "shorter than declared", body: good, length: int64(len(good)) + 10},
		{name: "longer than declared", body: good, length: int64(len(good)) - 1},
		{name: "declared over the bound", body: big, length: int64(len(big))},
		{name: "chunked over the bound", body: big, length: -1},
		{name: "declared at the bound, garbage", body: make([]byte, MaxRequest), length: MaxRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/ocsp", io.MultiReader(bytes.NewReader(tt.body)))
			req.ContentLength = tt.length
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/ocsp-response" {
				t.Fatalf("HTTP %d, Content-Type %q; want 200 application/ocsp-response", rec.Code, rec.Header().Get("Content-Type"))
			}
			if !tt.good {
				if !bytes.Equal(rec.Body.Bytes(), xocsp.MalformedRequestErrorResponse) {
					t.Errorf("body %x; want malformedRequest", rec.Body.Bytes())
				}
				return
			}
			if resp := parse(t, rec, alice, c.Cert); resp.Status != xocsp.Good {
				t.Errorf("status %d; want good", resp.Status)
			}
		})
	}
}

// The Date header is formatted once a second and shared by the answers of
// that second.
func TestOCSPDateCache(t *testing.T) {
	var d dateCache
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 100, time.UTC)
	first := d.header(t0)
	if want := "Wed, 02 Jan 2030 03:04:05 GMT"; len(first) != 1 || first[0] != want {
		t.Fatalf("header(%v) = %q; want [%q]", t0, first, want)
	}
	if again := d.header(t0.Add(800 * time.Millisecond)); &again[0] != &first[0] {
		t.Errorf("a second value within the same second: %q", again)
	}
	if next := d.header(t0.Add(time.Second)); next[0] != "Wed, 02 Jan 2030 03:04:06 GMT" {
		t.Errorf("the next second: %q", next)
	}
	if back := d.header(t0); back[0] != first[0] {
		t.Errorf("a clock stepped back: %q; want %q", back, first)
	}
}

// The responder mounted on its own (not behind a Server, which bounds a
// request's body by its read timeout) bounds the reading of a POST body
// itself: a body that never comes gets malformedRequest.
func TestOCSPBoundsBodyAlone(t *testing.T) {
	c, signer, _ := newTestCA(t)
	alice := issue(t, c, signer, "alice")
	r := newTestResponder(t, Config{CA: c, Signer: signer})
	good := request(t, alice, c.Cert, crypto.SHA1)
	r.bodyTimeout = 300 * time.Millisecond
	ts := httptest.NewServer(r)
	defer ts.Close()
	c2, err := net.DialTimeout("tcp", strings.TrimPrefix(ts.URL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c2, "POST /ocsp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(good))
	resp, err := http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil {
		t.Fatalf("the responder alone, a body never sent: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if !bytes.Equal(body, xocsp.MalformedRequestErrorResponse) {
		t.Errorf("the responder alone, a body never sent: HTTP %d, %x; want malformedRequest", resp.StatusCode, body)
	}
}
