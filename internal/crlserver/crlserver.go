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
// (404) until Set.
type Server struct {
	mu      sync.Mutex
	st      State
	changed chan struct{}
	bases   []string
}

// State is what a Server publishes: the complete CRL and its number, and
// the delta CRL (nil for none) with its number and the number of its base,
// as the Server is told them (a test may make it lie).
type State struct {
	Complete               []byte
	Number                 int64
	Delta                  []byte
	DeltaNumber, DeltaBase int64
}

// Set publishes st, and wakes the long polls.
func (s *Server) Set(st State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st = st
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
	st := s.st
	if st.Delta != nil && st.DeltaNumber > st.Number && base >= st.DeltaBase && base < st.DeltaNumber {
		return st.Delta, st.DeltaBase, s.changed
	}
	return st.Complete, -1, s.changed
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
