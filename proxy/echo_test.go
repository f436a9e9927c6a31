package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestEchoText(t *testing.T) {
	tests := []struct {
		name   string
		method string
		target string
		header http.Header
		want   string
	}{
		{"sorted headers with Host", "GET", "/a?b=c", http.Header{
			"X-Ssl-Client-Cn": {"simon"}, "Accept": {"*/*"}, "User-Agent": {"curl/8"},
		}, "GET /a?b=c HTTP/1.1\nAccept: */*\nHost: app.example.com\nUser-Agent: curl/8\nX-Ssl-Client-Cn: simon\n"},
		{"repeated values each on a line", "POST", "/", http.Header{"X-A": {"2", "1"}},
			"POST / HTTP/1.1\nHost: app.example.com\nX-A: 1\nX-A: 2\n"},
		{"bytes outside printable ASCII escaped", "GET", "/", http.Header{"X-Name": {"Jos\xc3\xa9\x1b[31m \\ end"}},
			"GET / HTTP/1.1\nHost: app.example.com\nX-Name: Jos\\xc3\\xa9\\x1b[31m \\\\ end\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "http://app.example.com"+tt.target, strings.NewReader("the body is never echoed"))
			r.RequestURI = ""
			r.Header = tt.header
			if got := EchoText(r); got != tt.want {
				t.Errorf("EchoText() = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestEchoHandler(t *testing.T) {
	srv := httptest.NewServer(EchoHandler())
	defer srv.Close()
	req, err := http.NewRequest("PUT", srv.URL+"/x", strings.NewReader("secret body"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Test", "1")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Errorf("status %d; want 200", resp.StatusCode)
	}
	for name, want := range map[string]string{"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s: %q; want %q", name, got, want)
		}
	}
	if got := string(body); !strings.HasPrefix(got, "PUT /x HTTP/1.1\n") || !strings.Contains(got, "\nX-Test: 1\n") || strings.Contains(got, "secret") {
		t.Errorf("body %q; want the request line and headers, not the request body", got)
	}
}
