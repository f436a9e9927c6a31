package serve

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// GET / and /signin/... reach Config.Signin; POST / stays OCSP's, and a
// server without sign-in answers 404 there.
func TestSigninRoute(t *testing.T) {
	signin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "signin "+r.URL.Path) })
	with := newFixture(t, func(cfg *Config) { cfg.Signin = signin })
	without := newFixture(t, nil)
	tests := []struct {
		name, method, target string
		srv                  *Server
		code                 int
		body                 string
	}{
		{"start page", http.MethodGet, "/", with.srv, http.StatusOK, "signin /"},
		{"callback", http.MethodGet, "/signin/callback?state=a&code=b", with.srv, http.StatusOK, "signin /signin/callback"},
		{"form", http.MethodPost, "/signin/devices/add", with.srv, http.StatusOK, "signin /signin/devices/add"},
		{"OCSP post", http.MethodPost, "/", with.srv, http.StatusNotFound, "no OCSP responder"},
		{"encoded", http.MethodGet, "/signin/%64evices", with.srv, http.StatusBadRequest, "encoded paths"},
		{"without sign-in", http.MethodGet, "/signin/devices", without.srv, http.StatusNotFound, "not found"},
		{"start page without sign-in", http.MethodGet, "/", without.srv, http.StatusNotFound, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "http://pki.example.com/", nil)
			req.RequestURI = tt.target
			if u, err := req.URL.Parse(tt.target); err == nil {
				req.URL = u
			}
			rec := httptest.NewRecorder()
			tt.srv.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.code || !strings.Contains(rec.Body.String(), tt.body) {
				t.Errorf("%s %s = %d %q; want %d containing %q", tt.method, tt.target, rec.Code, rec.Body, tt.code, tt.body)
			}
		})
	}
}
