package main

import (
	"io"
	"strconv"
	"strings"
	"testing"
)

// With --refusal page, `minica proxy` lets clients without a good
// certificate through the handshake and answers them a page (text here)
// with its status and reason, the help URL, and nothing from the upstream;
// valid clients get through with their days left in a header, in the log
// and in the histogram of /metrics.
func TestProxyProcessRefusalPage(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	const help = "https://pki.example.com/renew"
	p := f.startProxy(t, "--refusal", "page", "--help-url", help, "--reload-interval", "300ms",
		"--header", "X-SSL-Client-Days-Left=days_left")
	url := "https://" + p.addr + "/private"

	status, h, body, _, err := get(f.client(t, "alice"), url)
	if err != nil || status != 200 {
		t.Fatalf("GET as alice: %d %q %v", status, body, err)
	}
	days := h.Get("X-Ssl-Client-Days-Left")
	if n, err := strconv.Atoi(days); err != nil || n < 300 || n > 400 {
		t.Errorf("X-SSL-Client-Days-Left = %q; want the days left of a one-year certificate", days)
	}
	p.waitLog(t, "request ", "cn=alice ", "days_left="+days+" ", "status=200")

	mustMinica(t, f.dir, "revoke", "bob", "--reason", "keyCompromise")
	tests := []struct {
		name, client string
		status       int
		reason       string
		want         []string
	}{
		{"no certificate", "", 496, "no-certificate", []string{"No client certificate (no-certificate)", "Get a client certificate: " + help}},
		{"revoked", "bob", 495, "revoked", []string{"Your certificate has been revoked (revoked)", "(reason: keyCompromise)", `CN "bob"`, "Get a new certificate: " + help}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eventually(t, tt.name, func() string {
				resp, err := f.client(t, tt.client).Get(url)
				if err != nil {
					return err.Error()
				}
				defer resp.Body.Close()
				data, _ := io.ReadAll(resp.Body)
				page := string(data)
				if resp.StatusCode != tt.status || resp.Header.Get("X-Minica-Refusal") != tt.reason {
					return "status " + resp.Status + " reason " + resp.Header.Get("X-Minica-Refusal") + ":\n" + page
				}
				for _, w := range tt.want {
					if !strings.Contains(page, w) {
						return "a page without " + strconv.Quote(w) + ":\n" + page
					}
				}
				if strings.Contains(page, "X-Ssl-Client") || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
					return "an answer from the upstream: " + page
				}
				return ""
			})
			p.waitLog(t, "request ", "uri=/private", "status="+strconv.Itoa(tt.status), "reason="+tt.reason)
		})
	}
	if strings.Contains(p.stderr.String(), "handshake-refused") {
		t.Errorf("page mode refused a handshake:\n%s", p.stderr)
	}
	status, metrics := plainGet(t, "http://"+p.metricsAddr+"/metrics")
	// Each connection of alice, and of bob until the reload revoked him,
	// counts once: a year's certificates, all within 365 days.
	for _, want := range []string{`minica_proxy_client_certificate_days_left_bucket{le="90"} 0`,
		`minica_proxy_client_certificate_days_left_bucket{le="365"} `, `minica_proxy_requests_refused_total{reason="revoked"}`} {
		if status != 200 || !strings.Contains(metrics, want) {
			t.Errorf("/metrics: %d, without %q:\n%s", status, want, metrics)
		}
	}
	if strings.Contains(metrics, "minica_proxy_client_certificate_days_left_count 0\n") {
		t.Errorf("the days-left histogram counted no connection:\n%s", metrics)
	}
}
