package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHandler(t *testing.T) {
	tests := []struct {
		path    string
		headers map[string]string
		want    string
	}{
		{"/", nil, "ok\n"},
		{"/any/path?q=1", map[string]string{"X-Ssl-Client-Cn": "alice"}, "ok\n"},
		{"/headers", map[string]string{"X-Ssl-Client-Email": "a@example.com", "X-Ssl-Client-Cn": "alice", "Accept": "*/*"},
			"Accept: */*\nX-Ssl-Client-Cn: alice\nX-Ssl-Client-Email: a@example.com\n"},
		{"/headers", nil, "\n"},
	}
	h := newHandler()
	for _, tt := range tests {
		r := httptest.NewRequest("GET", tt.path, nil)
		for k, v := range tt.headers {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || w.Body.String() != tt.want {
			t.Errorf("GET %s = %d %q; want 200 %q", tt.path, w.Code, w.Body.String(), tt.want)
		}
	}
}
