package serve

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"minica/ca"
)

// Requests under /enroll that the Enroller never sees (refused by the
// server's target checks, or on a server without enrollment) still carry
// the enrollment headers: their URL may hold a token.
func TestEnrollHeadersBeforeRouting(t *testing.T) {
	with := newEnrollFixture(t, nil)
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

// Two serve processes on one CA directory (two Enrollers, each on its own
// CA handle, so that only the CA's file lock orders them) racing on one
// token issue exactly one certificate.
func TestEnrollConcurrentUseAcrossHandles(t *testing.T) {
	f := newEnrollFixture(t, nil)
	c, err := ca.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Now = f.clock.Now
	second, err := NewEnroller(EnrollConfig{CA: c, Signer: f.signer, Now: f.clock.Now, AllowHTTP: true,
		LockTimeout: 10 * time.Second, P12Iterations: 1, Rate: 1000, Burst: 1000, TotalRate: 10000, TotalBurst: 10000})
	if err != nil {
		t.Fatal(err)
	}
	f.h.cfg.LockTimeout = 10 * time.Second
	token := f.create(t, "simon", ca.EnrollIdentity{}, time.Hour)
	form := download(f.csrf(t, token), testPassword, "p12").Encode()
	const n = 16
	codes := make([]int, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range n {
		h := http.Handler(f.h)
		if i%2 == 1 {
			h = second
		}
		wg.Go(func() {
			req := httptest.NewRequest(http.MethodPost, "/enroll/"+token, strings.NewReader(form))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := httptest.NewRecorder()
			<-gate
			h.ServeHTTP(rec, req)
			codes[i] = rec.Code
		})
	}
	close(gate)
	wg.Wait()
	counts := map[int]int{}
	for _, code := range codes {
		counts[code]++
	}
	if counts[200] != 1 || counts[404] != n-1 {
		t.Errorf("%d simultaneous downloads through two handles got %v; want one 200 and %d 404", n, counts, n-1)
	}
	if recs := f.clientRecords(t, "simon"); len(recs) != 1 {
		t.Errorf("%d certificates issued for simon; want exactly 1", len(recs))
	}
}
