package serve

import (
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"

	"minica/ca"
	"minica/crlsource"
	"minica/revoke"
	"minica/serve/internal/etag"
)

// The headers of the delta CRL protocol (see the package doc), those its
// client, crlsource, sends and reads: a client that applies delta CRLs
// names the complete CRL it holds in hdrCRLBase; an answer that is a delta
// CRL names its base in hdrDeltaCRL ("base=N").
const (
	hdrCRLBase  = crlsource.HeaderBase
	hdrDeltaCRL = crlsource.HeaderDelta
)

// maxCRLNumberDigits bounds a Minica-CRL-Base value: a CRL number has at
// most 20 octets (RFC 5280 section 5.2.3), 49 decimal digits.
const maxCRLNumberDigits = 49

// deltaState is the delta CRL served beside a complete CRL, or none (body
// nil). It is immutable but for changed, closed when another state
// replaces it: that wakes the long polls of the clients that follow delta
// CRLs, and only theirs.
type deltaState struct {
	body     *crlBody    // the delta CRL alone; nil for none
	base     *big.Int    // its base CRL number
	number   *big.Int    // its own CRL number
	baseText string      // base in decimal, for hdrDeltaCRL
	combined *revoke.CRL // the complete CRL with the delta applied
	stamp    ca.FileStamp
	changed  chan struct{}
}

// appliesTo reports whether the delta CRL brings a client holding the
// complete CRL numbered base up to date: its base is at most base, and
// it is newer than base.
func (d *deltaState) appliesTo(base *big.Int) bool {
	return d.body != nil && d.base.Cmp(base) <= 0 && base.Cmp(d.number) < 0
}

// deltaSeen is a version of the store's delta CRL that loadDelta judged
// for a complete CRL (named by its entity tag, lest a CRL replaced be kept
// in memory) and did not install: not read again for it.
type deltaSeen struct {
	stamp    ca.FileStamp
	complete string
}

// withDelta returns p's CRL with the delta CRL served beside it applied,
// or p's CRL when there is none.
func (p *published) withDelta() *revoke.CRL {
	if ds := p.delta.Load(); ds.body != nil {
		return ds.combined
	}
	return p.crl
}

// deltaJudged reports whether the version stamp of the store's delta CRL
// was judged for p already (served beside it, or not), so that it is not
// read again. The caller holds caMu.
func (s *Server) deltaJudged(p *published, stamp ca.FileStamp) bool {
	return stamp == p.delta.Load().stamp || s.deltaSeen == (deltaSeen{stamp, p.etag})
}

// loadDelta makes the delta CRL served beside p the store's current one
// (ca.CA.PublishedDelta) when that changed: none when the store has none
// or a complete CRL was signed after it. A delta is served only when it
// applies to p (revoke.CRL.WithDelta: newer than p, against a base p
// includes) and, applied to p, may replace what is served
// (revoke.MayReplace: no lower number, no expired delta over a current
// CRL). One that is unreadable or refused keeps the state held, and is
// logged and counted once. The caller holds caMu.
func (s *Server) loadDelta(p *published) {
	held := p.delta.Load()
	stamp, err := s.cfg.CA.DeltaCRLStamp()
	if err == nil && s.deltaJudged(p, stamp) {
		return
	}
	var d *revoke.CRL
	var der []byte
	if err == nil {
		d, der, err = s.cfg.CA.PublishedDelta()
	}
	if errors.Is(err, ca.ErrNoDeltaCRL) {
		if held.body != nil {
			s.setDelta(p, &deltaState{stamp: stamp})
		} else {
			s.deltaSeen = deltaSeen{stamp, p.etag}
		}
		return
	}
	next := &deltaState{stamp: stamp}
	replace := false
	if err == nil {
		next.combined, err = p.crl.WithDelta(d)
	}
	if err == nil {
		cur := held.combined
		if cur == nil {
			cur = p.crl
		}
		issuer := s.cfg.CA.Cert
		replace, err = revoke.MayReplace(revoke.IssuedCRL{CRL: next.combined, Issuer: issuer}, revoke.IssuedCRL{CRL: cur, Issuer: issuer}, s.cfg.Now())
	}
	if err != nil {
		s.deltaSeen = deltaSeen{stamp, p.etag}
		if msg := err.Error(); msg != s.deltaErr {
			s.deltaErr = msg
			s.m.loadFailures.Add(1)
			s.log.Event("crl-delta-refused", "error", msg, "serving", p.crl.Number().String())
		}
		return
	}
	s.deltaErr = ""
	if !replace {
		s.deltaSeen = deltaSeen{stamp, p.etag} // the delta served, its number unchanged
		return
	}
	next.body = &crlBody{crl: d, der: der, etag: etag.Of(der)}
	next.base, next.number = d.DeltaBase(), d.Number()
	next.baseText = next.base.String()
	s.setDelta(p, next)
}

// setDelta makes ds the delta state of p and wakes the long polls waiting
// on the one it replaces. The caller holds caMu.
func (s *Server) setDelta(p *published, ds *deltaState) {
	ds.changed = make(chan struct{})
	old := p.delta.Swap(ds)
	if ds.body != nil {
		s.log.Event("crl-delta-loaded", "number", ds.number.String(), "base", ds.baseText,
			"entries", fmt.Sprint(ds.body.crl.Len()), "next_update", rfc3339(ds.body.crl.NextUpdate()), "etag", strings.Trim(ds.body.etag, `"`))
	} else {
		s.log.Event("crl-delta-dropped", "serving", p.crl.Number().String(), "reason", "the store holds no delta CRL after it")
	}
	close(old.changed)
	if s.cur.Load() == p { // not yet served: install tells of both
		s.m.deltaReloads.Add(1)
		if s.cfg.OnCRLChange != nil {
			s.cfg.OnCRLChange()
		}
	}
}

// crlBase returns the CRL number of Minica-CRL-Base in h, or nil when
// there is none or it is not one decimal number (the client then gets
// the complete CRL, as one that sends none).
func crlBase(h http.Header) *big.Int {
	vals := h.Values(hdrCRLBase)
	if len(vals) != 1 {
		return nil
	}
	v := strings.TrimSpace(vals[0])
	if v == "" || len(v) > maxCRLNumberDigits || strings.Trim(v, "0123456789") != "" {
		return nil
	}
	n, ok := new(big.Int).SetString(v, 10)
	if !ok {
		return nil
	}
	return n
}

// crlQuery is what a request for a CRL asks for: the delta CRL alone (its
// own paths), or the complete CRL, answered with the delta CRL when the
// client holds a complete CRL numbered base that it applies to.
type crlQuery struct {
	deltaOnly bool
	base      *big.Int // Minica-CRL-Base; nil for none
	asPEM     bool
}

// followsDelta reports whether a change of the delta CRL alone may change
// the answer to q.
func (q crlQuery) followsDelta() bool { return q.deltaOnly || q.base != nil }

// crlAnswer is the CRL a query gets: body nil when there is none to give
// (a delta CRL asked for, and none served), delta set when body is the
// delta CRL.
type crlAnswer struct {
	body  *crlBody
	delta *deltaState
}

// pick returns q's answer from cur and ds, the delta state of cur.
func (q crlQuery) pick(cur *published, ds *deltaState) crlAnswer {
	switch {
	case q.deltaOnly && ds.body == nil:
		return crlAnswer{}
	case q.deltaOnly || (q.base != nil && ds.appliesTo(q.base)):
		return crlAnswer{body: ds.body, delta: ds}
	}
	return crlAnswer{body: &cur.crlBody}
}

// current reports whether a, the answer r gets, is the copy r holds
// (If-None-Match, or If-Modified-Since).
func (a crlAnswer) current(r *http.Request) bool {
	return a.body != nil && notModified(r, a.body.etag, a.body.crl.ThisUpdate())
}
