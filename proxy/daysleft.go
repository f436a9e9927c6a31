package proxy

import (
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"minica/identity"
)

// daysBuckets are the upper bounds, in days, of the days-left histogram.
var daysBuckets = []float64{1, 7, 14, 30, 90, 365}

// daysHistogram is the Prometheus histogram of the days left of client
// certificates, one observation per client connection whose certificate
// passed; the zero value is empty and ready.
type daysHistogram struct {
	mu     sync.Mutex
	counts [7]uint64 // per bucket of daysBuckets (not cumulative), then +Inf
	sum    float64
	n      uint64
}

// observe counts a certificate ending at notAfter, at now, in days with
// their fraction: a bucket le="7" holds those ending within 7 days.
func (h *daysHistogram) observe(notAfter, now time.Time) {
	days := notAfter.Sub(now).Hours() / 24
	i := len(daysBuckets)
	for j, b := range daysBuckets {
		if days <= b {
			i = j
			break
		}
	}
	h.mu.Lock()
	h.counts[i]++
	h.sum += days
	h.n++
	h.mu.Unlock()
}

// write writes the histogram as name in the Prometheus text format.
func (h *daysHistogram) write(w io.Writer, name string) {
	h.mu.Lock()
	counts, sum, n := h.counts, h.sum, h.n
	h.mu.Unlock()
	fmt.Fprintf(w, "# TYPE %s histogram\n", name)
	var cum uint64
	for i, b := range daysBuckets {
		cum += counts[i]
		fmt.Fprintf(w, "%s_bucket{le=%q} %d\n", name, strconv.FormatFloat(b, 'g', -1, 64), cum)
	}
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n", name, n)
	fmt.Fprintf(w, "%s_sum %s\n%s_count %d\n", name, strconv.FormatFloat(sum, 'g', -1, 64), name, n)
}

// refreshDaysLeft renders ci's headers again, with a new Identity, when
// the days left of its admitted client's certificate changed since they
// were rendered: a connection that lasts over a day boundary sends the
// count of each request's time. ci.mu is held.
func (p *Proxy) refreshDaysLeft(ci *conn, now time.Time) {
	if ci.id == nil || ci.refused != "" {
		return
	}
	days := identity.DaysLeft(ci.id.NotAfter, now)
	if days == ci.id.DaysLeft {
		return
	}
	id := *ci.id // an Identity never changes once handed out
	id.DaysLeft = days
	ci.id = &id
	ci.headers = p.headers.Render(&id)
	ci.hdrLen = identity.WireSize(ci.headers)
}
