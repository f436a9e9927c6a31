package h1direct

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"minica/internal/httptoken"
)

// clientPrefix is a Rewriter that reserves the names of the X-Ssl-Client
// prefix, in any case and with '_' for '-', and sets no field.
type clientPrefix struct{}

func (clientPrefix) Reserved(name string) bool {
	return strings.HasPrefix(strings.ToLower(strings.ReplaceAll(name, "_", "-")), "x-ssl-client")
}

func (clientPrefix) SetHeaders(_ http.Header, _ *http.Request, values []string) []string {
	return values
}

// headsMatch writes r with writeHead and with Request.Write, and checks
// that both parse (http.ReadRequest) to the same method, URI, proto, Host
// and header, that both heads hold the same lines (writeHead's header
// lines in another order) and that writeHead wrote the head and nothing
// more.
func headsMatch(t *testing.T, r *http.Request) {
	t.Helper()
	var got, want bytes.Buffer
	bw := bufio.NewWriter(&got)
	errGot := writeHead(bw, r)
	bw.Flush()
	errWant := r.Write(&want)
	if (errGot != nil) != (errWant != nil) {
		t.Fatalf("writeHead: %v, Request.Write: %v", errGot, errWant)
	}
	if errWant != nil {
		return
	}
	b, err := parseHead(want.Bytes())
	if err != nil { // Request.Write writes what it is given, such as a path "x"
		if _, errA := parseHead(got.Bytes()); errA == nil {
			t.Fatalf("writeHead's %q parses, Request.Write's %q does not: %v", got.Bytes(), want.Bytes(), err)
		}
		return
	}
	a, err := parseHead(got.Bytes())
	if err != nil {
		t.Fatalf("writeHead's %q: %v", got.Bytes(), err)
	}
	if a.Method != b.Method || a.RequestURI != b.RequestURI || a.Proto != b.Proto ||
		a.Host != b.Host || !reflect.DeepEqual(a.Header, b.Header) {
		t.Fatalf("writeHead parses to %s %q %s Host %q %v\nRequest.Write to %s %q %s Host %q %v",
			a.Method, a.RequestURI, a.Proto, a.Host, a.Header, b.Method, b.RequestURI, b.Proto, b.Host, b.Header)
	}
	la, lb := strings.Split(got.String(), "\r\n"), strings.Split(want.String(), "\r\n")
	if la[0] != lb[0] {
		t.Fatalf("request line %q, Request.Write %q", la[0], lb[0])
	}
	slices.Sort(la)
	slices.Sort(lb)
	if !slices.Equal(la, lb) {
		t.Fatalf("writeHead wrote\n%q\nRequest.Write\n%q", got.String(), want.String())
	}
}

// parseHead parses head, which must end with the request's head.
func parseHead(head []byte) (*http.Request, error) {
	br := bufio.NewReader(bytes.NewReader(head))
	r, err := http.ReadRequest(br)
	if err == nil && br.Buffered() > 0 {
		err = fmt.Errorf("%d bytes after the head", br.Buffered())
	}
	return r, err
}

func TestWriteHeadAsRequestWrite(t *testing.T) {
	up := func(path, query string) *url.URL {
		return &url.URL{Scheme: "http", Host: "127.0.0.1:8080", Path: path, RawQuery: query}
	}
	tests := []struct {
		name string
		r    http.Request
	}{
		{"get", http.Request{Method: "GET", URL: up("/", ""), Host: "app.example.com",
			Header: http.Header{"Accept": {"*/*"}, "User-Agent": {"curl/8"}}}},
		{"empty method and path", http.Request{URL: up("", ""), Host: "h"}},
		{"no Host: the URL's", http.Request{Method: "GET", URL: up("/a", "b=c")}},
		{"query and escapes", http.Request{Method: "GET", URL: &url.URL{Scheme: "http", Host: "u",
			Path: "/a b/ü", RawPath: "/a%20b/%C3%BC", RawQuery: "x=%2F&y"}, Host: "h:443"}},
		{"force query", http.Request{Method: "GET", URL: &url.URL{Scheme: "http", Host: "u", Path: "/p", ForceQuery: true}}},
		{"empty User-Agent: none", http.Request{Method: "GET", URL: up("/", ""), Header: http.Header{"User-Agent": {""}}}},
		{"User-Agent without values", http.Request{Method: "GET", URL: up("/", ""), Header: http.Header{"User-Agent": {}}}},
		{"two User-Agents: the first", http.Request{Method: "GET", URL: up("/", ""), Header: http.Header{"User-Agent": {"a", "b"}}}},
		{"User-Agent trimmed", http.Request{Method: "GET", URL: up("/", ""), Header: http.Header{"User-Agent": {" \tx y\t "}}}},
		{"no User-Agent: Go's", http.Request{Method: "GET", URL: up("/", "")}},
		{"values trimmed, repeated, empty", http.Request{Method: "GET", URL: up("/", ""),
			Header: http.Header{"X-A": {" 1 ", "2", ""}, "X-B": {}, "X-C": {"\tq\t"}}}},
		{"excluded fields", http.Request{Method: "GET", URL: up("/", ""), Header: http.Header{
			"Host": {"evil"}, "Content-Length": {"5"}, "Transfer-Encoding": {"chunked"}, "Trailer": {"X"}}}},
		{"head", http.Request{Method: "HEAD", URL: up("/", "")}},
		{"delete: Content-Length 0", http.Request{Method: "DELETE", URL: up("/x", "")}},
		{"post without a body", http.Request{Method: "POST", URL: up("/x", ""), Body: http.NoBody}},
		{"options", http.Request{Method: "OPTIONS", URL: up("/", "")}},
		{"ipv6 host", http.Request{Method: "GET", URL: up("/", ""), Host: "[::1]:8080"}},
		{"ipv6 zone: Request.Write", http.Request{Method: "GET", URL: up("/", ""), Host: "[fe80::1%25eth0]:80"}},
		{"unicode host: Request.Write", http.Request{Method: "GET", URL: up("/", ""), Host: "bücher.example"}},
		{"invalid host: Request.Write", http.Request{Method: "GET", URL: up("/", ""), Host: "a b"}},
		{"control byte in the URI: refused", http.Request{Method: "GET", URL: &url.URL{Scheme: "http", Host: "u", Opaque: "/a\nb"}}},
		{"close: Request.Write", http.Request{Method: "GET", URL: up("/", ""), Close: true}},
		{"body: Request.Write", http.Request{Method: "PUT", URL: up("/", ""), ContentLength: 2,
			Body: http.NoBody}},
		{"identity profile", http.Request{Method: "GET", URL: up("/app", "q=1"), Host: "app.example.com",
			Header: http.Header{"X-Ssl-Client-Cn": {"simon"}, "X-Ssl-Client-Email": {"simon@example.com"},
				"X-Forwarded-For": {"10.0.0.1"}, "X-Forwarded-Host": {"app.example.com"}, "X-Forwarded-Proto": {"https"},
				"X-Ssl-Client-Cert": {strings.Repeat("MIIB%2B", 200)}, "Te": {"trailers"}, "User-Agent": {""}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { headsMatch(t, &tt.r) })
	}
}

// FuzzWriteHead checks writeHead against Request.Write over header names
// and values, paths, queries, hosts and methods; a name or value that
// fails the outbound check is refused by checkOutHeaders, and by
// outHeader unless it drops the field (hop-by-hop, X-Forwarded-*,
// reserved), before anything is written.
func FuzzWriteHead(f *testing.F) {
	f.Add("GET", "app.example.com", "/a/b", "x=1&y=%2F", "X-Ssl-Client-Cn", "simon", "")
	f.Add("DELETE", "[::1]:80", "/a b", "", "Accept", " text/html ", "curl")
	f.Add("GET", "h", "", "", "X-Bad", "a\r\nX-Evil: 1", "")
	f.Add("GET", "h", "/", "", "Bad Name", "v", "\x00")
	f.Add("GET", "h", "/", "", "X-Ssl-Client", "\x01", "") // reserved: dropped
	f.Fuzz(func(t *testing.T, method, host, path, query, name, value, ua string) {
		if method == "" || !httptoken.Valid(method) {
			return // the server admits no other method
		}
		r := &http.Request{Method: method, Host: host, Header: http.Header{name: {value, value}},
			URL: &url.URL{Scheme: "http", Host: "127.0.0.1:8080", Path: path, RawQuery: query}}
		if ua != "" {
			r.Header["User-Agent"] = []string{ua}
		}
		valid := httptoken.Valid(name) && ValidFieldValue(value) && ValidFieldValue(ua)
		out, err := outHeader(new(outBuf), r, clientPrefix{})
		if valid && ValidFieldValue(host) && err != nil {
			t.Fatalf("outHeader: %v", err)
		}
		if err == nil { // what it keeps is valid; a hop-by-hop or reserved name it drops
			if err := checkOutHeaders(out); err != nil {
				t.Fatalf("outHeader kept %v: %v", out, err)
			}
		}
		if err := checkOutHeaders(r.Header); (err == nil) != valid {
			t.Fatalf("checkOutHeaders: %v, want an error: %v", err, !valid)
		}
		if valid {
			headsMatch(t, r)
		}
	})
}
