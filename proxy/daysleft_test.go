package proxy

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The days_left field counts at each request, on a connection that lasts
// over a day boundary too; the access log has it, and the histogram counts
// each new connection's certificate once.
func TestDaysLeftHeaderLogAndMetric(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.CustomHeaders = []string{"X-SSL-Client-Days-Left=days_left"}
		c.CRLGrace = 10 * 24 * time.Hour // the clock moves on by days
	})
	cert, key := clientValidFor(t, e, "dana", 10*24*time.Hour+time.Hour)
	c := e.client(cert, key, false)
	// Then 9 days and 1h01m left, then 1h01m: the last day.
	advance := []time.Duration{24 * time.Hour, 9*24*time.Hour - time.Minute, 0}
	for i, want := range []string{"10", "9", "0"} {
		if code, _ := e.get(c, "/", nil); code != 200 {
			t.Fatalf("status %d; want 200", code)
		}
		if got := e.lastReq.Load().Header.Get("X-Ssl-Client-Days-Left"); got != want {
			t.Errorf("X-SSL-Client-Days-Left = %q; want %q", got, want)
		}
		e.waitLog("request ", "cn=dana", "days_left="+want+" ")
		e.advance(advance[i])
	}
	e.client(cert, key, true).Get(e.url("/")) // a second connection
	var b bytes.Buffer
	e.p.writeMetrics(&b)
	wants := []string{
		"# TYPE minica_proxy_client_certificate_days_left histogram",
		`minica_proxy_client_certificate_days_left_bucket{le="1"} 1`,
		`minica_proxy_client_certificate_days_left_bucket{le="7"} 1`,
		`minica_proxy_client_certificate_days_left_bucket{le="14"} 2`,
		`minica_proxy_client_certificate_days_left_bucket{le="365"} 2`,
		`minica_proxy_client_certificate_days_left_bucket{le="+Inf"} 2`,
		`minica_proxy_client_certificate_days_left_count 2`,
	}
	for _, w := range wants {
		if !strings.Contains(b.String(), w+"\n") {
			t.Errorf("metrics lack %q:\n%s", w, b.String())
		}
	}
	if !strings.Contains(b.String(), "minica_proxy_client_certificate_days_left_sum 10.") {
		t.Errorf("histogram sum is not about 10 days + 0.08:\n%s", b.String())
	}
}

func TestDaysHistogramEmpty(t *testing.T) {
	var h daysHistogram
	var b bytes.Buffer
	h.write(&b, "x")
	want := "# TYPE x histogram\n" +
		`x_bucket{le="1"} 0` + "\n" + `x_bucket{le="7"} 0` + "\n" + `x_bucket{le="14"} 0` + "\n" +
		`x_bucket{le="30"} 0` + "\n" + `x_bucket{le="90"} 0` + "\n" + `x_bucket{le="365"} 0` + "\n" +
		`x_bucket{le="+Inf"} 0` + "\n" + "x_sum 0\nx_count 0\n"
	if b.String() != want {
		t.Errorf("empty histogram:\n%s\nwant\n%s", b.String(), want)
	}
}
