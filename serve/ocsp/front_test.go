package ocsp

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp/fasthttputil"

	"minica/serve/internal/fastocsp"
)

// A frontEnd puts an HTTP server in front of a responder: the responder
// itself (net/http), or the dedicated listener's fasthttp server
// (package fastocsp), reached
// through a real client over an in-memory connection.
type frontEnd func(testing.TB, *Responder) http.Handler

// bothFrontEnds runs test against each front end.
func bothFrontEnds(t *testing.T, test func(*testing.T, frontEnd)) {
	for _, fe := range []struct {
		name  string
		front frontEnd
	}{
		{"net-http", func(_ testing.TB, r *Responder) http.Handler { return r }},
		{"fasthttp", fastFront},
	} {
		t.Run(fe.name, func(t *testing.T) { test(t, fe.front) })
	}
}

// fastFront returns an http.Handler that sends each request to r's
// fasthttp server (every path routed to the responder, as when
// ServeHTTP is called directly) and copies the answer back.
func fastFront(t testing.TB, r *Responder) http.Handler {
	// the limits of serve's defaults
	lim := fastocsp.Limits{MaxConns: 1024, MaxHeaderBytes: 16 << 10, MaxBody: MaxRequest,
		ReadTimeout: 10 * time.Second, WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}
	srv := fastocsp.NewServer(r, lim, func(string, string) bool { return true }, func(bool, int) {})
	ln := fasthttputil.NewInmemoryListener()
	go srv.Serve(ln)
	tr := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return ln.Dial() }}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Shutdown()
		ln.Close()
	})
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		out := req.Clone(context.Background())
		out.RequestURI = ""
		u := *req.URL
		if !strings.HasPrefix(u.Path, "/") { // a path under StripPrefix
			u.Path, u.RawPath = "/"+u.Path, ""
		}
		u.Scheme, u.Host = "http", "ocsp.test"
		out.URL = &u
		resp, err := tr.RoundTrip(out)
		if err != nil {
			t.Errorf("%s %s through fasthttp: %v", req.Method, req.URL, err)
			w.WriteHeader(599)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})
}
