package serve

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"minica/serve/enroll"
)

// Requests under /enroll that the Enroller never sees (refused by the
// server's target checks, or on a server without enrollment) still carry
// the enrollment headers: their URL may hold a token.
func TestEnrollHeadersBeforeRouting(t *testing.T) {
	with := newFixture(t, func(cfg *Config) {
		h, err := enroll.New(enroll.Config{CA: cfg.CA, Signer: cfg.Signer, Now: cfg.Now, AllowHTTP: true})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Enroll = h
	})
	without := newFixture(t, nil)
	tests := []struct {
		name   string
		srv    *Server
		target string
		code   int
	}{
		{"encoded token", with.srv, "/enroll/AAAA%41AAAA", http.StatusBadRequest},
		{"dot segment", with.srv, "/enroll/../enroll/AAAA", http.StatusBadRequest},
		{"empty segment", with.srv, "/enroll//AAAA", http.StatusBadRequest},
		{"no token", with.srv, "/enroll", http.StatusNotFound},
		{"no enrollment", without.srv, "/enroll/AAAA", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "http://pki.example.com/", nil)
			req.RequestURI = tt.target
			req.URL.Path, req.URL.RawPath = "", ""
			if u, err := req.URL.Parse(tt.target); err == nil {
				req.URL = u
			}
			rec := httptest.NewRecorder()
			tt.srv.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Fatalf("GET %s = %d; want %d", tt.target, rec.Code, tt.code)
			}
			for k, want := range map[string]string{"Cache-Control": "no-store", "Referrer-Policy": "same-origin"} {
				if got := rec.Header().Get(k); got != want {
					t.Errorf("GET %s: %s = %q; want %q", tt.target, k, got, want)
				}
			}
		})
	}
}
