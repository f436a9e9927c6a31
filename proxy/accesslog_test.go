package proxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"minica/identity"
	"minica/proxy/policy"
)

// printableASCII reports whether b is a line of printable ASCII only.
func printableASCII(b string) bool {
	for i := 0; i < len(b); i++ {
		if b[i] < 0x20 || b[i] >= 0x7f {
			return false
		}
	}
	return true
}

func TestAppendJSONString(t *testing.T) {
	tests := []struct {
		name, in, want, decoded string
	}{
		{"plain", "alice", `"alice"`, "alice"},
		{"empty", "", `""`, ""},
		{"quote and backslash", `a"b\c`, `"a\"b\\c"`, `a"b\c`},
		{"newline", "a\nb\r\tc", `"a\nb\r\tc"`, "a\nb\r\tc"},
		{"control", "a\x00\x01\x1f\x7fb", `"a\u0000\u0001\u001f\u007fb"`, "a\x00\x01\x1f\x7fb"},
		{"non-ASCII", "Zoë", `"Zo\u00eb"`, "Zoë"},
		{"line separator", "a\u2028b", `"a\u2028b"`, "a\u2028b"},
		{"beyond the BMP", "a😀b", `"a\ud83d\ude00b"`, "a😀b"},
		{"invalid UTF-8", "a\xffb\xc3", `"a\ufffdb\ufffd"`, "a\ufffdb\ufffd"},
		{"HTML is left alone", "<a&b>", `"<a&b>"`, "<a&b>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(appendJSONString(nil, tt.in))
			if got != tt.want {
				t.Errorf("appendJSONString(%q) = %s; want %s", tt.in, got, tt.want)
			}
			var s string
			if err := json.Unmarshal([]byte(got), &s); err != nil || s != tt.decoded {
				t.Errorf("json.Unmarshal(%s) = %q, %v; want %q", got, s, err, tt.decoded)
			}
		})
	}
}

// FuzzAppendJSONString checks that any value is one valid JSON string of
// printable ASCII that decodes to the value, each byte of invalid UTF-8
// replaced by U+FFFD.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "alice", "a\"\\\n", "Zoë😀", "\xff\xc3(", "\u2028\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := appendJSONString(nil, in)
		if !printableASCII(string(got)) {
			t.Fatalf("appendJSONString(%q) = %s: not printable ASCII", in, got)
		}
		var s string
		if err := json.Unmarshal(got, &s); err != nil {
			t.Fatalf("appendJSONString(%q) = %s: %v", in, got, err)
		}
		if want := string([]rune(in)); s != want {
			t.Fatalf("appendJSONString(%q) decodes to %q; want %q", in, s, want)
		}
	})
}

func TestParseLogFormat(t *testing.T) {
	tests := []struct{ in, want, wantErr string }{
		{"", LogText, ""}, {"text", LogText, ""}, {"JSON", LogJSON, ""}, {"json", LogJSON, ""},
		{"yaml", "", `log format "yaml": want text or json`},
	}
	for _, tt := range tests {
		got, err := ParseLogFormat(tt.in)
		if got != tt.want || (err == nil) != (tt.wantErr == "") || err != nil && err.Error() != tt.wantErr {
			t.Errorf("ParseLogFormat(%q) = %q, %v; want %q, %q", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	never := func() ([]*x509.Certificate, error) {
		t.Fatal("New loaded the CA despite a bad LogFormat")
		return nil, nil
	}
	cfg := Config{LogFormat: "xml", Upstream: "http://127.0.0.1:1", LoadCA: never,
		CRL: crlFunc(func() ([]byte, error) { return nil, nil }), LoadCert: func() (tls.Certificate, error) { return tls.Certificate{}, nil }}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), `log format "xml"`) {
		t.Errorf("New(LogFormat xml) error = %v; want the log format named", err)
	}
}

// jsonLines parses every line of log as a JSON object, failing on a line
// that is not one or that holds anything but printable ASCII.
func jsonLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
		if !printableASCII(line) {
			t.Errorf("log line %q: not printable ASCII", line)
		}
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(line))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

var rfc3339ms = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// TestJSONAccessLog runs a proxy with LogFormat json and checks the line
// of an allowed request, of refused ones and of an event, with a hostile
// CN (quotes, a newline, non-ASCII) and a path of raw bytes (a quote,
// invalid UTF-8): every line is one JSON object of printable ASCII.
func TestJSONAccessLog(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.LogFormat = "json"; c.AllowCN = []string{"Zoë \"q\"\nx", "alice"} })
	cert, key := e.ca.Leaf(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "Zoë \"q\"\nx"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	id, err := identity.New(cert, nil)
	if err != nil {
		t.Fatal(err)
	}
	bob, bobKey := e.ca.Client(t, "bob")

	c := e.dialHTTP1(t, cert, key)
	c.SetDeadline(time.Now().Add(closeWait))
	io.WriteString(c, "GET /caf\xc3\xa9/\"x\xff/?token=secret HTTP/1.1\r\nHost: localhost\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("hostile path: status %d %q; want 200", resp.StatusCode, body)
	}
	if code, _ := e.get(e.client(bob, bobKey, true), "/bob", nil); code != http.StatusForbidden {
		t.Fatalf("bob: status %d; want 403", code)
	}
	e.setCRL(e.makeCRL(cert.SerialNumber))
	if err := e.p.Reload(); err != nil {
		t.Fatal(err)
	}
	e.waitCount(`"event":"reload"`, 1)

	var requests []map[string]any
	for _, m := range jsonLines(t, e.log.String()) {
		if tm, _ := m["time"].(string); !rfc3339ms.MatchString(tm) {
			t.Errorf("time %q: want RFC 3339 UTC with milliseconds", m["time"])
		}
		switch m["event"] {
		case "request":
			requests = append(requests, m)
		case "reload":
			if m["crl_number"] != "2" {
				t.Errorf("reload line %v: want crl_number \"2\"", m)
			}
		}
	}
	if len(requests) != 2 {
		t.Fatalf("%d request lines; want 2:\n%s", len(requests), e.log.String())
	}
	bobID, _ := identity.New(bob, nil)
	want := []map[string]any{{
		"event": "request", "remote": requests[0]["remote"], "route": "upstream", "cn": "Zoë \"q\"\nx",
		"serial": id.SerialHex, "fingerprint": id.SHA256, "days_left": json.Number("0"), "decision": "allowed", "reason": "",
		"method": "GET", "path": "/caf\u00e9/\"x\ufffd/", "proto": "HTTP/1.1",
		"status": json.Number("200"), "bytes": json.Number("19"),
	}, {
		"event": "request", "remote": requests[1]["remote"], "route": "upstream", "cn": "bob",
		"serial": bobID.SerialHex, "fingerprint": bobID.SHA256, "days_left": json.Number("0"), "decision": "refused", "reason": "not-allowed",
		"method": "GET", "path": "/bob", "proto": "HTTP/2.0",
		"status": json.Number("403"), "bytes": json.Number("19"),
	}}
	for i, got := range requests {
		lat, err := got["latency"].(json.Number).Float64()
		if err != nil || lat < 0 || lat > 60 {
			t.Errorf("request %d: latency %v; want seconds", i, got["latency"])
		}
		delete(got, "latency")
		delete(got, "time")
		for k, v := range want[i] {
			if got[k] != v {
				t.Errorf("request %d: %s = %#v; want %#v", i, k, got[k], v)
			}
		}
		for k := range got {
			if _, ok := want[i][k]; !ok {
				t.Errorf("request %d: unexpected field %s = %#v", i, k, got[k])
			}
		}
	}
	if strings.Contains(e.log.String(), "secret") {
		t.Errorf("the query string is in the log:\n%s", e.log.String())
	}
}

// nullWriter takes lines without keeping them, and is not io.Discard, so
// that the logger formats them.
type nullWriter struct{}

func (nullWriter) Write(p []byte) (int, error) { return len(p), nil }

// A JSON request line costs no allocation: it is appended into a pooled
// buffer, as a text one.
func TestJSONRequestLineAllocations(t *testing.T) {
	p := &Proxy{log: &logger{w: nullWriter{}, json: true}}
	r := httptest.NewRequest("GET", "/caf%C3%A9?q=1", nil)
	id := &identity.Identity{CN: "Zoë \"q\"", SerialHex: "0A1B", SHA256: "ab", DaysLeft: 3}
	rec := &recorder{status: 200, bytes: 19, forwarded: true, route: &policy.Route{Name: "wiki"}}
	start := time.Now()
	if n := testing.AllocsPerRun(100, func() { p.logRequest(r, id, rec, "", start) }); n != 0 {
		t.Errorf("a JSON request line: %v allocations; want 0", n)
	}
}

// BenchmarkRequestLine is the cost of one access log line, text and JSON.
func BenchmarkRequestLine(b *testing.B) {
	r := httptest.NewRequest("GET", "/wiki/page?q=1", nil)
	r.RemoteAddr = "127.0.0.1:50000"
	id := &identity.Identity{CN: "alice", SerialHex: "D38974F57799AF6AF2E4AE9D0050F629",
		SHA256: "d3e6163ce9d82d2d32e27b6acb3daf8d40fc64dd908f3b5166fa59a28380c31e", DaysLeft: 30}
	rec := &recorder{status: 200, bytes: 19, forwarded: true, route: &policy.Route{Name: "wiki"}}
	for _, json := range []bool{false, true} {
		b.Run(map[bool]string{false: "text", true: "json"}[json], func(b *testing.B) {
			p := &Proxy{log: &logger{w: nullWriter{}, json: json}}
			start := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				p.logRequest(r, id, rec, "", start)
			}
		})
	}
}

// An answer after 103 Early Hints is logged with its own status, not
// 103, both the direct way (HTTP/1.1) and through ReverseProxy (HTTP/2).
func TestEarlyHintsLogTheFinalStatus(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, "tea")
	}))
	defer upstream.Close()
	e := newEnv(t, func(c *Config) { c.Upstream = upstream.URL; c.LogFormat = "json" })
	cert, key := e.ca.Client(t, "alice")
	for i, h2 := range []bool{false, true} {
		if code, body := e.get(e.client(cert, key, h2), "/", nil); code != http.StatusTeapot || body != "tea" {
			t.Fatalf("h2=%v: %d %q; want 418 \"tea\"", h2, code, body)
		}
		e.waitCount(`"event":"request"`, i+1)
	}
	for _, m := range jsonLines(t, e.log.String()) {
		if m["event"] == "request" && m["status"] != json.Number("418") {
			t.Errorf("%s request logged with status %v; want 418", m["proto"], m["status"])
		}
	}
}
