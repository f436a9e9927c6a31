// Package crlserver is a test server of the delta CRL protocol of `minica
// serve` (see docs/proxy.md, "Delta CRLs"), for the tests of the clients
// of it (crlsource.Follower, the proxy) while serve's own side is not at
// hand. It knows the CRL numbers it is told and nothing of CRL contents.
package crlserver

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"minica/crlsource"
)

// Server answers every GET as serve answers /crl.der: with the delta CRL
// when there is one, newer than the complete CRL, and the request's
// crlsource.HeaderBase N is at or above its base and below its number;
// else with the complete CRL. A request whose If-None-Match names what it
// would get is held up to its Prefer: wait for a change (a long poll),
// then answered 304 if nothing changed. Its zero value serves nothing
// (404) until SetComplete.
type Server struct {
	mu                     sync.Mutex
	complete, delta        []byte
	number                 int64
	deltaNumber, deltaBase int64
	changed                chan struct{}
	bases                  []string
}

// SetComplete makes data, numbered number, the complete CRL, and wakes
// the long polls. The delta stays, and is served while it is newer.
func (s *Server) SetComplete(data []byte, number int64) {
	s.set(func() { s.complete, s.number = data, number })
}

// SetDelta makes data, numbered number against the complete CRL numbered
// base, the delta CRL (nil for none), and wakes the long polls.
func (s *Server) SetDelta(data []byte, number, base int64) {
	s.set(func() { s.delta, s.deltaNumber, s.deltaBase = data, number, base })
}

func (s *Server) set(change func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change()
	if s.changed != nil {
		close(s.changed)
	}
	s.changed = make(chan struct{})
}

// Bases returns the HeaderBase of each request so far, "" for none.
func (s *Server) Bases() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bases)
}

// answer returns what a request with base (-1 for none) gets: the body,
// the delta's base (-1 for the complete CRL), and the channel closed at
// the next change.
func (s *Server) answer(base int64) ([]byte, int64, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	if s.delta != nil && s.deltaNumber > s.number && base >= s.deltaBase && base < s.deltaNumber {
		return s.delta, s.deltaBase, s.changed
	}
	return s.complete, -1, s.changed
}

// ServeHTTP answers a GET of the CRL (see Server).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := r.Header.Get(crlsource.HeaderBase)
	s.mu.Lock()
	s.bases = append(s.bases, h)
	s.mu.Unlock()
	base, err := strconv.ParseInt(h, 10, 64)
	if err != nil {
		base = -1
	}
	body, deltaBase, changed := s.answer(base)
	if v, ok := strings.CutPrefix(r.Header.Get("Prefer"), "wait="); ok {
		n, _ := strconv.Atoi(v)
		w.Header().Set("Preference-Applied", "wait="+strconv.Itoa(n))
		if body != nil && matches(r, body) {
			t := time.NewTimer(time.Duration(n) * time.Second)
			defer t.Stop()
			select {
			case <-changed:
			case <-t.C:
			case <-r.Context().Done():
				return
			}
			body, deltaBase, _ = s.answer(base)
		}
	}
	switch {
	case body == nil:
		http.NotFound(w, r)
		return
	case matches(r, body):
		w.WriteHeader(http.StatusNotModified)
		return
	case deltaBase >= 0:
		w.Header().Set(crlsource.HeaderDelta, "base="+strconv.FormatInt(deltaBase, 10))
	}
	w.Header().Set("Content-Type", "application/pkix-crl")
	w.Header().Set("ETag", crlsource.Tag(body))
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

// matches reports whether the If-None-Match of r names the tag of body.
func matches(r *http.Request, body []byte) bool {
	tag := crlsource.Tag(body)
	for _, t := range strings.Split(r.Header.Get("If-None-Match"), ",") {
		if strings.TrimSpace(t) == tag {
			return true
		}
	}
	return false
}
