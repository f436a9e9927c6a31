package serve

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"minica/revoke"
	"minica/serve/internal/connlimit"
)

// Health is the state /healthz reports.
type Health struct {
	State      revoke.CRLState // by revoke.Freshness, no grace
	Number     string
	ThisUpdate time.Time
	NextUpdate time.Time
	// DeltaNumber is the number of the delta CRL served beside the CRL,
	// "" for none.
	DeltaNumber string
	// CanSign is set when serve has the CA key and it signs; SignerError
	// is why a key in a token does not (ca.SignerStatus), or "".
	CanSign     bool
	SignerError string
	// StoreError is why the store did not answer at the last round of
	// Watch, or "" (StoreUp).
	StoreUp    bool
	StoreError string
	// Warning is why the CRL may lapse, or "": serve cannot sign and the
	// CRL is past half its lifetime, or re-signing failed.
	Warning string
}

// Health returns the current state of the served CRL.
func (s *Server) Health() Health {
	cur := s.cur.Load()
	now := s.cfg.Now()
	h := Health{
		State:  revoke.Freshness(cur.crl.ThisUpdate(), cur.crl.NextUpdate(), revoke.Thresholds{}, now),
		Number: cur.crl.Number().String(), ThisUpdate: cur.crl.ThisUpdate(), NextUpdate: cur.crl.NextUpdate(),
		CanSign: s.cfg.Signer != nil, StoreUp: true,
	}
	if ds := cur.delta.Load(); ds.body != nil {
		h.DeltaNumber = ds.number.String()
	}
	if s.keyStatus != nil {
		if err := s.keyStatus.Err(); err != nil {
			h.CanSign, h.SignerError = false, err.Error()
		}
	}
	if e := s.storeErr.Load(); e != nil {
		h.StoreUp, h.StoreError = false, *e
	}
	if pastHalfLife(cur.crl, now) {
		switch {
		case h.SignerError != "":
			h.Warning = "the CA key cannot sign, so the CRL is not re-signed: it lapses at " + rfc3339(h.NextUpdate)
		case !h.CanSign:
			h.Warning = "serve runs with --no-sign and cannot re-sign the CRL: it lapses at " + rfc3339(h.NextUpdate) + " unless 'minica crl' publishes one"
		case cur.resignErr.Load() != nil:
			h.Warning = "re-signing the CRL failed (" + *cur.resignErr.Load() + "): it lapses at " + rfc3339(h.NextUpdate)
		}
	}
	return h
}

// serveHealth answers 200 while the CRL is current (fresh or due soon),
// the store answers and the CA key (when serve has it) signs, and 503
// otherwise: OCSP, renewals and enrollments need the store, renewals,
// enrollments and re-signing the key. The first line says "ok", "ok:
// warning: ..." or "unavailable: ...", the next ones the facts.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	h := s.Health()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	var first string
	switch {
	case h.State == revoke.Expired:
		first = "unavailable: the CRL expired at " + rfc3339(h.NextUpdate)
	case h.State == revoke.NotYetValid:
		first = "unavailable: the CRL is not valid before " + rfc3339(h.ThisUpdate)
	case !h.StoreUp:
		first = "unavailable: " + h.StoreError
	case h.SignerError != "":
		first = "unavailable: the CA key cannot sign: " + h.SignerError
	case h.Warning != "":
		first = "ok: warning: " + h.Warning
	default:
		first = "ok"
	}
	if strings.HasPrefix(first, "unavailable") {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	if r.Method == http.MethodHead {
		return
	}
	delta := h.DeltaNumber
	if delta == "" {
		delta = "none"
	}
	fmt.Fprintf(w, "%s\ncrl-state: %s\ncrl-number: %s\nthis-update: %s\nnext-update: %s\ndelta-crl-number: %s\ncan-sign: %t\nstore-up: %t\n",
		first, h.State, h.Number, rfc3339(h.ThisUpdate), rfc3339(h.NextUpdate), delta, h.CanSign, h.StoreUp)
}

// metrics are the counters of /metrics.
type metrics struct {
	mu           sync.Mutex
	requests     map[reqKey]uint64 // under mu, but for ocspOK
	ocspOK       atomic.Uint64     // requests[{epOCSP, 200}]: the most frequent, counted without the lock
	reloads      atomic.Uint64
	deltaReloads atomic.Uint64
	// sent counts the CRL bodies sent and their bytes: [0] complete
	// CRLs, [1] delta CRLs.
	sent           [2]atomic.Uint64
	sentBytes      [2]atomic.Uint64
	loadFailures   atomic.Uint64
	resigns        atomic.Uint64
	resignFailures atomic.Uint64
	signer         atomic.Bool // holds the CRL signer's lease (see lease.go)
	waitersRefused atomic.Uint64
	conns          connlimit.Counters // of every listener
}

type reqKey struct {
	endpoint string
	code     int
}

func (m *metrics) request(endpoint string, code int) {
	if code == 0 {
		code = http.StatusOK
	}
	if code == http.StatusOK && endpoint == epOCSP {
		m.ocspOK.Add(1)
		return
	}
	m.mu.Lock()
	m.requests[reqKey{endpoint, code}]++
	m.mu.Unlock()
}

// crlSent counts a CRL answer of size bytes of body, a delta CRL or a
// complete one; 0 (a 304, a HEAD) is not counted.
func (m *metrics) crlSent(delta bool, size int) {
	if size == 0 {
		return
	}
	i := 0
	if delta {
		i = 1
	}
	m.sent[i].Add(1)
	m.sentBytes[i].Add(uint64(size))
}

// serveMetrics writes the Prometheus text format.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if r.Method == http.MethodHead {
		return
	}
	s.WriteMetrics(w)
}

// WriteMetrics writes the metrics of the Server, then those of Renew,
// then ExtraMetrics.
func (s *Server) WriteMetrics(w io.Writer) {
	h := s.Health()
	now := s.cfg.Now()
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	gauge := func(name, help string, v any) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %v\n", name, help, name, name, v)
	}
	counter := func(name, help string, v uint64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	gauge("minica_serve_crl_number", "Number of the CRL being served.", h.Number)
	gauge("minica_serve_crl_this_update_timestamp_seconds", "thisUpdate of the CRL being served.", h.ThisUpdate.Unix())
	gauge("minica_serve_crl_next_update_timestamp_seconds", "nextUpdate of the CRL being served.", h.NextUpdate.Unix())
	gauge("minica_serve_crl_next_update_seconds", "Seconds left to the nextUpdate of the CRL being served (negative past it).", fmt.Sprintf("%.3f", h.NextUpdate.Sub(now).Seconds()))
	deltaNumber := h.DeltaNumber
	if deltaNumber == "" {
		deltaNumber = "0"
	}
	gauge("minica_serve_delta_crl_number", "Number of the delta CRL served beside the CRL, 0 for none.", deltaNumber)
	gauge("minica_serve_crl_expired", "1 when the CRL being served is past its nextUpdate.", b(h.State == revoke.Expired))
	gauge("minica_serve_can_sign", "1 when serve holds the CA key and it signs (0 with --no-sign, and while the key's token is unusable).", b(h.CanSign))
	gauge("minica_serve_store_up", "1 when the store answered at the last round (always, on the file store).", b(h.StoreUp))
	gauge("minica_serve_crl_signer", "1 when this replica is the one that signs CRLs (always, on the file store, with the CA key).", b(s.m.signer.Load()))
	gauge("minica_serve_crl_lapse_warning", "1 when the CRL is past half its lifetime and serve cannot re-sign it (--no-sign, or re-signing fails).", b(h.Warning != ""))
	gauge("minica_serve_long_polls", "Long polls (Prefer: wait) waiting for a new CRL.", max(s.waiters.Load(), 0))
	gauge("minica_serve_connections", "Open client connections.", s.m.conns.Open.Load())
	if s.keyStatus != nil {
		counter("minica_serve_ca_key_reopens_total", "Times the CA key's token was opened again after its session or the key's handle was lost.", s.keyStatus.Reopens())
	}
	counter("minica_serve_crl_reloads_total", "New CRLs served since start (published by serve or another process).", s.m.reloads.Load())
	counter("minica_serve_delta_crl_reloads_total", "Delta CRLs served since start, or dropped, without a new CRL.", s.m.deltaReloads.Load())
	counter("minica_serve_crl_load_failures_total", "Versions of crl.der or of the delta CRL refused (unreadable, not a regular file, bad signature, lower number, not applying).", s.m.loadFailures.Load())
	counter("minica_serve_crl_resigns_total", "CRLs serve re-signed at half their lifetime.", s.m.resigns.Load())
	counter("minica_serve_crl_resign_failures_total", "Failed attempts to re-sign the CRL.", s.m.resignFailures.Load())
	counter("minica_serve_long_polls_refused_total", "Long polls answered at once because MaxWaiters were waiting.", s.m.waitersRefused.Load())
	counter("minica_serve_connections_evicted_total", "Connections closed, not in a request, to make room under MaxConns.", s.m.conns.Evicted.Load())
	counter("minica_serve_connections_refused_total", "Connections closed at once: MaxConns were all in requests.", s.m.conns.Refused.Load())

	s.m.mu.Lock()
	if n := s.m.ocspOK.Swap(0); n > 0 {
		s.m.requests[reqKey{epOCSP, http.StatusOK}] += n
	}
	keys := make([]reqKey, 0, len(s.m.requests))
	for k := range s.m.requests {
		keys = append(keys, k)
	}
	counts := make([]uint64, len(keys))
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].endpoint != keys[j].endpoint {
			return keys[i].endpoint < keys[j].endpoint
		}
		return keys[i].code < keys[j].code
	})
	for i, k := range keys {
		counts[i] = s.m.requests[k]
	}
	s.m.mu.Unlock()
	kinds := [2]string{"complete", "delta"}
	fmt.Fprintf(w, "# HELP minica_serve_crl_answers_total CRL bodies sent (GET answered 200), complete CRLs or delta CRLs.\n# TYPE minica_serve_crl_answers_total counter\n")
	for i, k := range kinds {
		fmt.Fprintf(w, "minica_serve_crl_answers_total{kind=%q} %d\n", k, s.m.sent[i].Load())
	}
	fmt.Fprintf(w, "# HELP minica_serve_crl_sent_bytes_total Bytes of CRL bodies sent, complete CRLs or delta CRLs.\n# TYPE minica_serve_crl_sent_bytes_total counter\n")
	for i, k := range kinds {
		fmt.Fprintf(w, "minica_serve_crl_sent_bytes_total{kind=%q} %d\n", k, s.m.sentBytes[i].Load())
	}
	fmt.Fprintf(w, "# HELP minica_serve_requests_total Requests answered, by endpoint and status code.\n# TYPE minica_serve_requests_total counter\n")
	for i, k := range keys {
		fmt.Fprintf(w, "minica_serve_requests_total{endpoint=%q,code=\"%d\"} %d\n", k.endpoint, k.code, counts[i])
	}
	if m, ok := s.cfg.Renew.(interface{ WriteMetrics(io.Writer) }); ok {
		m.WriteMetrics(w)
	}
	if s.cfg.ExtraMetrics != nil {
		s.cfg.ExtraMetrics(w)
	}
}
