package proxy

import (
	"fmt"
	"io"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"minica/identity"
)

// maxSeenClients bounds the memory of the expiring-soon metric.
const maxSeenClients = 100000

type metrics struct {
	requests    [600]atomic.Uint64 // by status, lock-free on the request path
	mu          sync.Mutex
	refused     map[string]uint64 // requests refused, by reason
	handshakes  map[string]uint64 // handshake failures, by reason
	reloads     map[string]uint64 // reload failures, by file
	closed      map[string]uint64 // open exchanges closed, by reason
	idle        map[string]uint64 // idle connections closed, by reason
	fetches     map[string]uint64 // failed CRL fetches, by reason
	lastFetch   atomic.Int64      // unix nanoseconds of the last good CRL fetch, 0 for none
	seen        map[string]time.Time
	shed        map[string]uint64 // connections closed for a limit, by reason
	early       map[string]uint64 // connections the client closed in or before its handshake, without an alert, by stage
	openConns   atomic.Int64
	handshaking atomic.Int64

	days daysHistogram // client certificates of new connections, by days left
}

func newMetrics() *metrics {
	return &metrics{
		refused:    map[string]uint64{},
		handshakes: map[string]uint64{}, reloads: map[string]uint64{}, shed: map[string]uint64{},
		early:  map[string]uint64{},
		closed: map[string]uint64{}, idle: map[string]uint64{}, fetches: map[string]uint64{},
		seen: map[string]time.Time{},
	}
}

func (m *metrics) request(status int, reason string) {
	if status >= 0 && status < len(m.requests) {
		m.requests[status].Add(1)
	}
	if reason != "" {
		m.mu.Lock()
		m.refused[reason]++
		m.mu.Unlock()
	}
}

func (m *metrics) handshakeFailed(reason string) {
	m.mu.Lock()
	m.handshakes[reason]++
	m.mu.Unlock()
}

func (m *metrics) connShed(reason string) {
	m.mu.Lock()
	m.shed[reason]++
	m.mu.Unlock()
}

func (m *metrics) connClosedEarly(stage string) {
	m.mu.Lock()
	m.early[stage]++
	m.mu.Unlock()
}

func (m *metrics) reloadFailed(file string) {
	m.mu.Lock()
	m.reloads[file]++
	m.mu.Unlock()
}

func (m *metrics) exchangeClosed(reason string) {
	m.mu.Lock()
	m.closed[reason]++
	m.mu.Unlock()
}

func (m *metrics) idleClosed(reason string) {
	m.mu.Lock()
	m.idle[reason]++
	m.mu.Unlock()
}

func (m *metrics) fetchFailed(reason string) {
	m.mu.Lock()
	m.fetches[reason]++
	m.mu.Unlock()
}

func (m *metrics) sawClient(id *identity.Identity) {
	m.mu.Lock()
	if len(m.seen) < maxSeenClients {
		m.seen[id.SerialHex] = id.NotAfter
	}
	m.mu.Unlock()
}

// MetricsHandler serves the proxy's metrics in the Prometheus text format,
// for a listener of its own:
//
//	minica_proxy_requests_total{code}              requests answered, by status
//	minica_proxy_requests_refused_total{reason}    requests refused by the proxy
//	minica_proxy_handshake_failures_total{reason}  refused TLS handshakes
//	minica_proxy_reload_failures_total{file}       failed reloads (ca, crl, cert, policy)
//	minica_proxy_exchanges_closed_total{reason}    open tunnels and streams closed, their client refused
//	minica_proxy_idle_connections_closed_total{reason} idle connections closed, their client refused
//	minica_proxy_connections_shed_total{reason}    closed for a limit (source-limit, handshake-limit, conn-limit)
//	minica_proxy_connections_closed_early_total{stage} closed by the client in or before the handshake, without an alert (no refusal)
//	minica_proxy_crl_fetch_failures_total{reason}  failed fetches of a CRL URL (see crlSink.FetchFailed)
//	minica_proxy_crl_last_fetch_success_seconds    unix time of the last good fetch of the CRL URL
//	minica_proxy_open_connections                  client connections past their handshake
//	minica_proxy_handshakes_in_progress            client connections in their handshake
//	minica_proxy_crl_number                        number of the CRL in use
//	minica_proxy_crl_age_seconds                   now minus its thisUpdate
//	minica_proxy_crl_next_update_seconds           its nextUpdate minus now
//	minica_proxy_certificate_days_left             the proxy's own certificate
//	minica_proxy_client_certificates_expiring_soon clients seen expiring within ExpiringSoon
//	minica_proxy_client_certificate_days_left      histogram of the days left of each new client connection's certificate
func (p *Proxy) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		p.writeMetrics(w)
	})
}

func (p *Proxy) writeMetrics(w io.Writer) {
	now := p.cfg.Now()
	t := p.trust.Load()
	m := p.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintln(w, "# TYPE minica_proxy_requests_total counter")
	for c := range m.requests {
		if n := m.requests[c].Load(); n > 0 {
			fmt.Fprintf(w, "minica_proxy_requests_total{code=\"%d\"} %d\n", c, n)
		}
	}
	writeLabeled(w, "minica_proxy_requests_refused_total", "reason", m.refused)
	writeLabeled(w, "minica_proxy_handshake_failures_total", "reason", m.handshakes)
	writeLabeled(w, "minica_proxy_reload_failures_total", "file", m.reloads)
	writeLabeled(w, "minica_proxy_exchanges_closed_total", "reason", m.closed)
	writeLabeled(w, "minica_proxy_idle_connections_closed_total", "reason", m.idle)
	writeLabeled(w, "minica_proxy_connections_shed_total", "reason", m.shed)
	writeLabeled(w, "minica_proxy_connections_closed_early_total", "stage", m.early)
	writeLabeled(w, "minica_proxy_crl_fetch_failures_total", "reason", m.fetches)
	if at := m.lastFetch.Load(); at != 0 {
		gauge(w, "minica_proxy_crl_last_fetch_success_seconds", float64(at)/1e9)
	}
	gauge(w, "minica_proxy_open_connections", float64(m.openConns.Load()))
	gauge(w, "minica_proxy_handshakes_in_progress", float64(m.handshaking.Load()))
	n, _ := new(big.Float).SetInt(t.crl.Number()).Float64()
	gauge(w, "minica_proxy_crl_number", n)
	gauge(w, "minica_proxy_crl_age_seconds", now.Sub(t.crl.ThisUpdate()).Seconds())
	gauge(w, "minica_proxy_crl_next_update_seconds", t.crl.NextUpdate().Sub(now).Seconds())
	gauge(w, "minica_proxy_certificate_days_left", p.cert.Current().Leaf.NotAfter.Sub(now).Hours()/24)
	soon := 0
	for _, na := range m.seen {
		if na.After(now) && na.Sub(now) <= p.cfg.ExpiringSoon {
			soon++
		}
	}
	gauge(w, "minica_proxy_client_certificates_expiring_soon", float64(soon))
	m.days.write(w, "minica_proxy_client_certificate_days_left")
}

func writeLabeled(w io.Writer, name, label string, vals map[string]uint64) {
	fmt.Fprintf(w, "# TYPE %s counter\n", name)
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s{%s=%s} %d\n", name, label, strconv.Quote(k), vals[k])
	}
}

func gauge(w io.Writer, name string, v float64) {
	fmt.Fprintf(w, "# TYPE %s gauge\n%s %s\n", name, name, strconv.FormatFloat(v, 'g', -1, 64))
}
