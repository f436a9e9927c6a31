//go:build interop

package browsertest

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// upstream is the application behind the proxy: it renders the identity
// headers it receives into the page and counts requests per CN.
type upstream struct {
	mu   sync.Mutex
	hits map[string]int
}

// startUpstream serves an upstream on 127.0.0.1 for the test's duration.
func startUpstream(t *testing.T) (*upstream, *httptest.Server) {
	t.Helper()
	u := &upstream{hits: map[string]int{}}
	srv := httptest.NewServer(u)
	t.Cleanup(srv.Close)
	return u, srv
}

// ServeHTTP renders the CN and email of the client as the proxy sent them.
func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cn, email := r.Header.Get("X-SSL-Client-CN"), r.Header.Get("X-SSL-Client-Email")
	u.mu.Lock()
	u.hits[cn]++
	u.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!doctype html><html><head><title>whoami</title></head><body>
<h1>Logged in</h1><p id="cn">CN: %s</p><p id="email">email: %s</p></body></html>`,
		html.EscapeString(cn), html.EscapeString(email))
}

// count returns how many requests the upstream got for cn.
func (u *upstream) count(cn string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.hits[cn]
}
