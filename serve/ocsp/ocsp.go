package ocsp

import (
	"bytes"
	"crypto"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	xocsp "golang.org/x/crypto/ocsp"

	"minica/ca"
	"minica/internal/eventlog"
	"minica/revoke"
	"minica/serve/internal/etag"
	"minica/serve/internal/httpreply"
)

// MaxRequest bounds the size of an OCSP request, POST body or decoded
// GET path: a request about one certificate with a nonce is about 100 bytes.
const MaxRequest = 4 << 10

// ResponderName is the name under which the responder records the
// delegated responder certificates it issues.
const ResponderName = "minica-ocsp"

// Defaults of Config.
const (
	DefaultResponseValidity = time.Hour
	DefaultLockTimeout      = 10 * time.Second
	// MaxAge bounds the Cache-Control max-age of a GET response, as
	// for the CRL, so that a cache in front learns of a revocation soon.
	MaxAge = 300 * time.Second
)

// Config configures a Responder.
type Config struct {
	// CA is the CA whose certificates the responder answers for. The
	// responder only reads it, except to issue its responder certificate,
	// which it does under the CA's lock.
	CA *ca.CA
	// Signer is the CA key; nil when serve runs without it (--no-sign).
	Signer crypto.Signer
	// SignWithCAKey signs responses with the CA key instead of a delegated
	// responder certificate; it needs Signer.
	SignWithCAKey bool
	// ResponseValidity is nextUpdate - thisUpdate of a response; 0 means
	// DefaultResponseValidity.
	ResponseValidity time.Duration
	// ResponderValidity is the lifetime of a responder certificate; 0
	// means ca.DefaultOCSPResponderValidity.
	ResponderValidity time.Duration
	// RenewBefore is how long before its notAfter a responder certificate
	// is replaced; 0 means half of ResponderValidity.
	RenewBefore time.Duration
	// LockTimeout bounds the wait for the CA lock when the responder issues
	// its certificate; 0 means DefaultLockTimeout.
	LockTimeout time.Duration
	// Now is the clock; nil means the CA's clock (CA.Now), which also
	// dates the responder certificates.
	Now func() time.Time
	// Log receives one line per event (a responder certificate issued, a
	// renewal or a lookup that failed), as the Server logs; nil discards.
	Log io.Writer
}

// Responder is an http.Handler answering OCSP requests; see the package
// doc. It is safe for concurrent use.
type Responder struct {
	cfg      Config
	log      *eventlog.Logger
	prefixes []string // GET path prefixes before the base64 request, longest first
	// caHashes are the issuer name and key hashes of the CA by hash.
	caHashes map[crypto.Hash][2][]byte

	signer  atomic.Pointer[signingKey]
	renewMu sync.Mutex                 // held while a responder certificate is obtained
	retryAt time.Time                  // no new attempt before, after a failure; under renewMu
	lastErr error                      // that failure, under renewMu
	recheck atomic.Bool                // set by CRLChanged: look the signer up again
	mu      sync.Mutex                 // guards cache and gen
	cache   map[string]*cachedResponse // by request DER (requests without a nonce)
	gen     uint64                     // bumped by CRLChanged and a new signer
	counts  [numOutcomes]atomic.Uint64
	hits    atomic.Uint64
	// signSlots bounds the signatures made at once (cache misses, nonces,
	// unknown serials) to half the CPUs, at least one, so that a flood of
	// requests that must be signed leaves CPU to the cached answers; a
	// request waits signWait at most for a slot, then gets tryLater.
	signSlots chan struct{}
	signWait  time.Duration
	maxCache  int
	// bodyTimeout bounds the reading of a POST body when no Server does.
	bodyTimeout time.Duration
	date        dateCache
}

// signingKey signs responses: a delegated responder certificate and its
// key, or the CA key itself (cert nil).
type signingKey struct {
	cert     *x509.Certificate
	key      crypto.Signer
	keyHash  []byte // SHA-1 of the subjectPublicKey bits: the ResponderID byKey
	notAfter time.Time
	renewAt  time.Time
}

type cachedResponse struct {
	der                    []byte
	length, etag           []string // header values, computed once
	lastModified, expires  []string
	gen                    uint64
	thisUpdate, nextUpdate time.Time
	refreshAt              time.Time
	outcome                outcome
	nonce                  bool // echoes a nonce: never cached
}

type outcome int

const (
	outGood outcome = iota
	outRevoked
	outUnknown
	outMalformed
	outUnauthorized
	outInternal
	outTryLater
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"good", "revoked", "unknown", "malformed", "unauthorized", "internal_error", "try_later"}

// New returns a responder for cfg.CA. It obtains its signing
// key at once (loading or issuing a responder certificate), so that a
// failure shows at start. Without the CA key and without a valid responder
// certificate it logs why and returns a responder that answers tryLater.
func New(cfg Config) (*Responder, error) {
	if cfg.CA == nil {
		return nil, errors.New("creating OCSP responder: a CA is required")
	}
	if cfg.SignWithCAKey && cfg.Signer == nil {
		return nil, errors.New("creating OCSP responder: signing with the CA key needs the CA key")
	}
	if cfg.ResponseValidity <= 0 {
		cfg.ResponseValidity = DefaultResponseValidity
	}
	if cfg.ResponderValidity <= 0 {
		cfg.ResponderValidity = ca.DefaultOCSPResponderValidity
	}
	if cfg.RenewBefore <= 0 || cfg.RenewBefore >= cfg.ResponderValidity {
		cfg.RenewBefore = cfg.ResponderValidity / 2
	}
	if cfg.LockTimeout <= 0 {
		cfg.LockTimeout = DefaultLockTimeout
	}
	if cfg.Now == nil {
		cfg.Now = cfg.CA.Now
	}
	r := &Responder{cfg: cfg, log: eventlog.NewLogger(cfg.Log, cfg.Now), cache: map[string]*cachedResponse{}, maxCache: 1 << 16,
		signSlots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2)), signWait: time.Second, bodyTimeout: defaultBodyTimeout}
	if err := r.hashCA(); err != nil {
		return nil, err
	}
	r.prefixes = []string{"/ocsp/"}
	if u, err := url.Parse(cfg.CA.Settings.OCSPURL); err == nil && cfg.CA.Settings.OCSPURL != "" {
		r.prefixes = append(r.prefixes, strings.TrimSuffix(u.Path, "/")+"/")
	}
	slices.SortFunc(r.prefixes, func(a, b string) int { return len(b) - len(a) })
	if _, err := r.signingKey(cfg.Now()); err != nil {
		if cfg.Signer != nil {
			return nil, fmt.Errorf("creating OCSP responder: %w", err)
		}
	}
	return r, nil
}

// hashCA computes the CA's issuerNameHash and issuerKeyHash (RFC 6960
// section 4.1.1) for every hash a request may use.
func (r *Responder) hashCA() error {
	key, err := subjectPublicKeyBits(r.cfg.CA.Cert)
	if err != nil {
		return err
	}
	r.caHashes = map[crypto.Hash][2][]byte{}
	for _, h := range []crypto.Hash{crypto.SHA1, crypto.SHA256, crypto.SHA384, crypto.SHA512} {
		n := h.New()
		n.Write(r.cfg.CA.Cert.RawSubject)
		k := h.New()
		k.Write(key)
		r.caHashes[h] = [2][]byte{n.Sum(nil), k.Sum(nil)}
	}
	return nil
}

func subjectPublicKeyBits(cert *x509.Certificate) ([]byte, error) {
	var spki struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if _, err := asn1.Unmarshal(cert.RawSubjectPublicKeyInfo, &spki); err != nil {
		return nil, fmt.Errorf("decoding the public key of %q: %w", cert.Subject.CommonName, err)
	}
	return spki.PublicKey.RightAlign(), nil
}

// CRLChanged drops every cached response: the server calls it whenever a
// new CRL is published, which is when a revocation becomes public, and
// whenever the revocation log changes. The next
// request also checks that the responder certificate itself was not
// revoked (then a new one is issued).
func (r *Responder) CRLChanged() {
	r.recheck.Store(true)
	r.dropCache()
}

func (r *Responder) dropCache() {
	r.mu.Lock()
	r.gen++
	clear(r.cache)
	r.mu.Unlock()
}

// WriteMetrics writes the responder's counters in the Prometheus text
// format: minica_serve_ocsp_responses_total{status} (good, revoked,
// unknown, malformed, unauthorized, internal_error, try_later),
// minica_serve_ocsp_cache_hits_total and, when it has one,
// minica_serve_ocsp_responder_expiry_seconds (time left to the signing
// certificate's notAfter).
func (r *Responder) WriteMetrics(w io.Writer) {
	fmt.Fprintln(w, "# HELP minica_serve_ocsp_responses_total OCSP responses sent, by status.")
	fmt.Fprintln(w, "# TYPE minica_serve_ocsp_responses_total counter")
	for i, name := range outcomeNames {
		fmt.Fprintf(w, "minica_serve_ocsp_responses_total{status=%q} %d\n", name, r.counts[i].Load())
	}
	fmt.Fprintln(w, "# HELP minica_serve_ocsp_cache_hits_total OCSP responses served from the cache.")
	fmt.Fprintln(w, "# TYPE minica_serve_ocsp_cache_hits_total counter")
	fmt.Fprintf(w, "minica_serve_ocsp_cache_hits_total %d\n", r.hits.Load())
	if s := r.signer.Load(); s != nil {
		fmt.Fprintln(w, "# HELP minica_serve_ocsp_responder_expiry_seconds Seconds until the OCSP signing certificate expires.")
		fmt.Fprintln(w, "# TYPE minica_serve_ocsp_responder_expiry_seconds gauge")
		fmt.Fprintf(w, "minica_serve_ocsp_responder_expiry_seconds %s\n", strconv.FormatFloat(s.notAfter.Sub(r.cfg.Now()).Seconds(), 'f', 0, 64))
	}
}

// ServeHTTP answers POST with a DER request body, and GET and HEAD with the
// request in the path; other methods get 405.
func (r *Responder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var body []byte
	var bodyErr error
	if req.Method == http.MethodPost {
		// Bounded in time as in size, whatever the server's timeouts.
		body, bodyErr = r.readPOST(w, req)
	}
	var a httpreply.Reply
	r.Answer(&a, req.Method, req.URL.Path, body, bodyErr, req.Header["If-None-Match"])
	h := w.Header()
	for _, f := range a.Fields() {
		h[f.Name] = f.Values
	}
	h["Date"] = r.date.header(time.Now())
	w.WriteHeader(a.Status)
	if a.Status != http.StatusNotModified {
		w.Write(a.Body)
	}
}

// Answer answers one request into a, whichever HTTP server carries it
// (ServeHTTP, or the dedicated listener's): method, the unescaped path,
// the body of a POST as read (bodyErr when its reading failed, too large
// included: malformedRequest) and the If-None-Match values. It counts the
// outcome. The header values of a are shared between answers: a writer
// only reads them.
func (r *Responder) Answer(a *httpreply.Reply, method, path string, body []byte, bodyErr error, inm []string) {
	var der []byte
	get := false
	switch method {
	case http.MethodPost:
		if bodyErr != nil {
			r.fail(a, outMalformed)
			return
		}
		der = body
	case http.MethodGet, http.MethodHead:
		get = true
		var ok bool
		if der, ok = r.pathRequest(path); !ok {
			r.fail(a, outMalformed)
			return
		}
	default:
		a.Status = http.StatusMethodNotAllowed
		a.Set("Allow", hdrAllowOCSP)
		a.Set("X-Content-Type-Options", hdrNosniff)
		a.Set("Content-Type", hdrTextPlain)
		a.Body = msgMethodOCSP
		a.Set("Content-Length", []string{strconv.Itoa(len(a.Body))})
		return
	}
	resp, out, err := r.respond(der)
	if err != nil {
		r.fail(a, out)
		return
	}
	r.counts[out].Add(1)
	a.Status = http.StatusOK
	switch {
	case resp.nonce:
		a.Set("Cache-Control", hdrNoStore)
	case get:
		// RFC 5019 section 6.2; the age is bounded, so that a cache in
		// front serves a stale answer for MaxAge at most.
		age := min(resp.nextUpdate.Sub(r.cfg.Now()), MaxAge)
		a.Set("Cache-Control", []string{"max-age=" + strconv.Itoa(max(int(age/time.Second), 0)) + ", public, no-transform, must-revalidate"})
		a.Set("Last-Modified", resp.lastModified)
		a.Set("Expires", resp.expires)
		a.Set("Etag", resp.etag)
		// A cache revalidating its copy (RFC 9110 section 13.1.2): a 304
		// without the content's Content-Type, as net/http sends it.
		if len(inm) > 0 && etagListed(inm, resp.etag[0]) {
			a.Status = http.StatusNotModified
			return
		}
	default:
		a.Set("Cache-Control", hdrNoCache)
	}
	a.Set("Content-Type", hdrOCSPResponse)
	a.Set("Content-Length", resp.length)
	a.Body = resp.der
}

// Header values shared by every response: net/http only reads them.
var (
	hdrOCSPResponse = []string{"application/ocsp-response"}
	hdrNoStore      = []string{"no-store"}
	hdrNoCache      = []string{"no-cache"}
	hdrAllowOCSP    = []string{"GET, HEAD, POST"}
	hdrTextPlain    = []string{"text/plain; charset=utf-8"}
	hdrNosniff      = []string{"nosniff"}
	msgMethodOCSP   = []byte("method not allowed: OCSP takes POST, or GET /ocsp/{base64 request}\n")
)

// etagListed reports whether an If-None-Match header lists etag or "*".
func etagListed(values []string, etag string) bool {
	for _, v := range values {
		for tag := range strings.SplitSeq(v, ",") {
			if tag = strings.TrimSpace(tag); tag == etag || tag == "*" || tag == "W/"+etag {
				return true
			}
		}
	}
	return false
}

// fail makes an OCSP error response (RFC 6960 section 4.2.1), unsigned.
func (r *Responder) fail(a *httpreply.Reply, out outcome) {
	r.counts[out].Add(1)
	a.Status = http.StatusOK
	a.Body = ocspErrorBodies[out]
	a.Set("Content-Type", hdrOCSPResponse)
	a.Set("Cache-Control", hdrNoStore)
	a.Set("Content-Length", []string{strconv.Itoa(len(a.Body))})
}

// pathRequest decodes the base64 request of a GET path, after one of the
// known prefixes or, when the handler is mounted with the prefix stripped,
// the whole path. Go has already undone the URL escaping.
func (r *Responder) pathRequest(p string) ([]byte, bool) {
	rest := strings.TrimPrefix(p, "/")
	for _, prefix := range r.prefixes {
		if s, ok := strings.CutPrefix(p, prefix); ok {
			rest = s
			break
		}
	}
	if rest == "" || len(rest) > base64.StdEncoding.EncodedLen(MaxRequest) {
		return nil, false
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if der, err := enc.DecodeString(rest); err == nil {
			return der, true
		}
	}
	return nil, false
}

// The ASN.1 of an OCSP request (RFC 6960 section 4.1.1), with what
// golang.org/x/crypto/ocsp.ParseRequest leaves out: the extensions.
type ocspRequest struct {
	TBSRequest tbsRequest
	Signature  asn1.RawValue `asn1:"explicit,tag:0,optional"`
}

type tbsRequest struct {
	Version       int           `asn1:"explicit,tag:0,default:0,optional"`
	RequestorName asn1.RawValue `asn1:"explicit,tag:1,optional"`
	RequestList   []singleRequest
	Extensions    []pkix.Extension `asn1:"explicit,tag:2,optional"`
}

type singleRequest struct {
	CertID     certID
	Extensions []pkix.Extension `asn1:"explicit,tag:0,optional"`
}

type certID struct {
	Raw            asn1.RawContent
	HashAlgorithm  pkix.AlgorithmIdentifier
	IssuerNameHash []byte
	IssuerKeyHash  []byte
	SerialNumber   *big.Int
}

var (
	oidNonce     = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 48, 1, 2}
	oidOCSPBasic = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 48, 1, 1}
	hashByOID    = map[string]crypto.Hash{
		"1.3.14.3.2.26":          crypto.SHA1,
		"2.16.840.1.101.3.4.2.1": crypto.SHA256,
		"2.16.840.1.101.3.4.2.2": crypto.SHA384,
		"2.16.840.1.101.3.4.2.3": crypto.SHA512,
	}
)

// respond answers one DER request. On an error, the outcome says which
// OCSP error to send.
func (r *Responder) respond(der []byte) (*cachedResponse, outcome, error) {
	// The cache is keyed by the request itself: a repeated request is
	// answered before any parsing, and one with a nonce never matches.
	now := r.cfg.Now()
	r.mu.Lock()
	gen := r.gen
	c := r.cache[string(der)]
	r.mu.Unlock()
	if c != nil && c.gen == gen && !now.Before(c.thisUpdate) && now.Before(c.refreshAt) {
		r.hits.Add(1)
		return c, c.outcome, nil
	}
	var req ocspRequest
	rest, err := asn1.Unmarshal(der, &req)
	if err != nil || len(rest) > 0 || len(req.TBSRequest.RequestList) != 1 {
		return nil, outMalformed, errors.New("malformed request")
	}
	id := req.TBSRequest.RequestList[0].CertID
	h, ok := hashByOID[id.HashAlgorithm.Algorithm.String()]
	if !ok || id.SerialNumber == nil {
		return nil, outMalformed, errors.New("unsupported hash")
	}
	var nonce *pkix.Extension
	for i, e := range req.TBSRequest.Extensions {
		if e.Id.Equal(oidNonce) {
			var v []byte
			if rest, err := asn1.Unmarshal(e.Value, &v); err != nil || len(rest) > 0 || len(v) == 0 || len(v) > 32 {
				return nil, outMalformed, errors.New("bad nonce") // RFC 8954 section 2.1
			}
			nonce = &pkix.Extension{Id: oidNonce, Value: req.TBSRequest.Extensions[i].Value}
		}
	}
	want := r.caHashes[h]
	if !bytes.Equal(id.IssuerNameHash, want[0]) || !bytes.Equal(id.IssuerKeyHash, want[1]) {
		return nil, outUnauthorized, errors.New("another issuer")
	}
	s, err := r.signingKey(now)
	if err != nil {
		return nil, outTryLater, err
	}
	single, out, err := r.status(id, now)
	if err != nil {
		r.log.Event("ocsp-lookup-failed", "serial", id.SerialNumber.Text(16), "error", err.Error())
		return nil, outInternal, err
	}
	thisUpdate := now.UTC().Truncate(time.Second)
	nextUpdate := thisUpdate.Add(r.cfg.ResponseValidity)
	if na := s.notAfter.UTC().Truncate(time.Second); na.Before(nextUpdate) {
		nextUpdate = na
	}
	single.ThisUpdate, single.NextUpdate = thisUpdate, nextUpdate
	var exts []pkix.Extension
	if nonce != nil {
		exts = []pkix.Extension{*nonce}
	}
	if !r.acquireSignSlot() {
		return nil, outTryLater, errors.New("every signing slot busy")
	}
	resp, err := s.sign(single, thisUpdate, exts)
	<-r.signSlots
	if err != nil {
		r.log.Event("ocsp-sign-failed", "error", err.Error())
		return nil, outInternal, err
	}
	res := &cachedResponse{der: resp, thisUpdate: thisUpdate, nextUpdate: nextUpdate, outcome: out, nonce: nonce != nil,
		length: []string{strconv.Itoa(len(resp))}, etag: []string{etag.Of(resp)},
		lastModified: []string{thisUpdate.Format(http.TimeFormat)}, expires: []string{nextUpdate.Format(http.TimeFormat)}}
	if res.nonce {
		return res, out, nil
	}
	res.gen = gen
	res.refreshAt = thisUpdate.Add(nextUpdate.Sub(thisUpdate) / 2)
	if out != outUnknown { // a reserved serial may become a certificate without a new CRL
		r.mu.Lock()
		if r.gen == gen {
			if len(r.cache) >= r.maxCache {
				clear(r.cache)
			}
			r.cache[string(der)] = res
		}
		r.mu.Unlock()
	}
	return res, out, nil
}

// status reads the record of id's serial and turns it into a single
// response without its times.
func (r *Responder) status(id certID, now time.Time) (*singleResponse, outcome, error) {
	single := &singleResponse{CertID: asn1.RawValue{FullBytes: id.Raw}}
	unknown := asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 2}
	if id.SerialNumber.Sign() <= 0 {
		single.Status = unknown
		return single, outUnknown, nil
	}
	rec, err := r.cfg.CA.Record(id.SerialNumber)
	if errors.Is(err, ca.ErrNotFound) {
		single.Status = unknown
		return single, outUnknown, nil
	}
	if err != nil {
		return nil, 0, err
	}
	switch rec.StatusAt(now) {
	case ca.StatusValid, ca.StatusExpired:
		single.Status = asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0}
		return single, outGood, nil
	case ca.StatusRevoked:
		info := revokedInfo{RevocationTime: rec.RevokedAt.UTC()}
		if reason, err := revoke.ParseReason(rec.Reason); err == nil && reason != revoke.Unspecified {
			info.Reason = asn1.Enumerated(reason)
		}
		inner, _ := asn1.Marshal(info) // a revokedInfo always marshals
		var seq asn1.RawValue
		asn1.Unmarshal(inner, &seq)
		single.Status = asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 1, IsCompound: true, Bytes: seq.Bytes}
		return single, outRevoked, nil
	}
	// Pending or void: the serial was reserved, and no certificate issued.
	single.Status = unknown
	return single, outUnknown, nil
}

// acquireSignSlot takes a signing slot, waiting signWait at most.
func (r *Responder) acquireSignSlot() bool {
	select {
	case r.signSlots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(r.signWait)
	defer t.Stop()
	select {
	case r.signSlots <- struct{}{}:
		return true
	case <-t.C:
		return false
	}
}

// The ASN.1 of a response (RFC 6960 section 4.2.1).
type ocspResponse struct {
	Status asn1.Enumerated
	Bytes  responseBytes `asn1:"explicit,tag:0,optional"`
}

type responseBytes struct {
	Type     asn1.ObjectIdentifier
	Response []byte
}

type basicResponse struct {
	TBS       asn1.RawValue
	Algorithm asn1.RawValue // a DER AlgorithmIdentifier
	Signature asn1.BitString
	Certs     []asn1.RawValue `asn1:"explicit,tag:0,optional"`
}

type responseData struct {
	ResponderID asn1.RawValue
	ProducedAt  time.Time `asn1:"generalized"`
	Responses   []singleResponse
	Extensions  []pkix.Extension `asn1:"explicit,tag:1,optional"`
}

type singleResponse struct {
	CertID     asn1.RawValue
	Status     asn1.RawValue
	ThisUpdate time.Time `asn1:"generalized"`
	NextUpdate time.Time `asn1:"generalized,explicit,tag:0,optional"`
}

type revokedInfo struct {
	RevocationTime time.Time       `asn1:"generalized"`
	Reason         asn1.Enumerated `asn1:"explicit,tag:0,optional"`
}

// sign builds and signs a successful basic response holding single.
func (s *signingKey) sign(single *singleResponse, producedAt time.Time, exts []pkix.Extension) ([]byte, error) {
	keyHash, _ := asn1.Marshal(s.keyHash)
	tbs, err := asn1.Marshal(responseData{
		ResponderID: asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 2, IsCompound: true, Bytes: keyHash},
		ProducedAt:  producedAt,
		Responses:   []singleResponse{*single},
		Extensions:  exts,
	})
	if err != nil {
		return nil, err
	}
	alg, sig, err := revoke.Sign(s.key, tbs)
	if err != nil {
		return nil, fmt.Errorf("signing OCSP responses: %w", err)
	}
	basic := basicResponse{TBS: asn1.RawValue{FullBytes: tbs}, Algorithm: asn1.RawValue{FullBytes: alg}, Signature: asn1.BitString{Bytes: sig, BitLength: 8 * len(sig)}}
	if s.cert != nil {
		basic.Certs = []asn1.RawValue{{FullBytes: s.cert.Raw}}
	}
	b, err := asn1.Marshal(basic)
	if err != nil {
		return nil, err
	}
	return asn1.Marshal(ocspResponse{Status: asn1.Enumerated(xocsp.Success), Bytes: responseBytes{Type: oidOCSPBasic, Response: b}})
}

// signingKey returns the key that signs responses at now, obtaining or
// renewing the responder certificate when it is due. While the current one
// is still valid, one caller renews it and the others go on with it; after
// a failure, no attempt is made (nor logged) for a minute.
func (r *Responder) signingKey(now time.Time) (*signingKey, error) {
	s := r.signer.Load()
	if s != nil && now.Before(s.renewAt) && !r.recheck.Load() {
		return s, nil
	}
	usable := s != nil && now.Before(s.notAfter)
	if usable {
		if !r.renewMu.TryLock() {
			return s, nil
		}
	} else {
		r.renewMu.Lock()
	}
	defer r.renewMu.Unlock()
	if cur := r.signer.Load(); cur != s && cur != nil && now.Before(cur.renewAt) && !r.recheck.Load() {
		return cur, nil // renewed meanwhile
	}
	if now.Before(r.retryAt) {
		if usable {
			return s, nil
		}
		return nil, r.lastErr
	}
	r.recheck.Store(false)
	ns, err := r.obtain(now)
	if err != nil {
		r.retryAt, r.lastErr = now.Add(time.Minute), err
		if usable && s.cert != nil {
			if rec, rerr := r.cfg.CA.Record(s.cert.SerialNumber); rerr == nil && rec.Status == ca.StatusRevoked {
				usable = false // never sign with a revoked responder
				r.signer.Store(nil)
			}
		}
		if usable {
			r.log.Event("ocsp-renew-failed", "error", err.Error(), "expires", s.notAfter.UTC().Format(time.RFC3339), "retry_in", "1m")
			return s, nil
		}
		r.log.Event("ocsp-no-signer", "error", err.Error(), "action", "answering tryLater")
		return nil, err
	}
	if s != nil && (s.cert == nil) == (ns.cert == nil) && (s.cert == nil || s.cert.Equal(ns.cert)) {
		return s, nil // the same signer
	}
	r.signer.Store(ns)
	r.dropCache() // responses of the old signer go
	return ns, nil
}

// obtain returns a signing key at now: the CA key with SignWithCAKey, else
// the newest responder certificate in the database that is not due for
// renewal (or, without the CA key, not expired), else a new one.
func (r *Responder) obtain(now time.Time) (*signingKey, error) {
	c := r.cfg.CA
	if r.cfg.SignWithCAKey {
		return newSigningKey(nil, r.cfg.Signer, c.Cert.NotAfter, c.Cert.NotAfter)
	}
	recs, err := c.RecordsByName(ResponderName)
	if err != nil {
		return nil, fmt.Errorf("looking up the OCSP responder certificate: %w", err)
	}
	for _, rec := range slices.Backward(recs) {
		if rec.Profile != ca.OCSP || rec.StatusAt(now) != ca.StatusValid || !rec.HasKey || !now.After(rec.NotBefore) {
			continue
		}
		renewAt := rec.NotAfter.Add(-r.cfg.RenewBefore)
		if r.cfg.Signer != nil && !now.Before(renewAt) {
			break // due: issue a new one
		}
		leaf, err := c.LoadLeaf(rec)
		if errors.Is(err, fs.ErrNotExist) {
			// Issued by a replica on another host (one database, a CA
			// directory each): its key never leaves that host.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("loading the OCSP responder certificate: %w", err)
		}
		if leaf.Cert.CheckSignatureFrom(c.Cert) != nil || !slices.Contains(leaf.Cert.ExtKeyUsage, x509.ExtKeyUsageOCSPSigning) {
			continue
		}
		return newSigningKey(leaf.Cert, leaf.Key, leaf.Cert.NotAfter, renewAt)
	}
	if r.cfg.Signer == nil {
		return nil, errors.New("no valid OCSP responder certificate, and no CA key to issue one (serve without --no-sign, or sign responses elsewhere)")
	}
	unlock, err := c.Lock(r.cfg.LockTimeout)
	if err != nil {
		return nil, fmt.Errorf("issuing the OCSP responder certificate: %w", err)
	}
	defer unlock()
	is, err := c.Issue(r.cfg.Signer, ca.Request{
		Name: ResponderName, Profile: ca.OCSP, CommonName: "OCSP responder",
		Validity: r.cfg.ResponderValidity, Force: true,
	})
	if err != nil {
		return nil, fmt.Errorf("issuing the OCSP responder certificate: %w", err)
	}
	r.log.Event("ocsp-responder-issued", "serial", is.Record.Serial, "not_after", is.Cert.NotAfter.UTC().Format(time.RFC3339))
	return newSigningKey(is.Cert, is.Key, is.Cert.NotAfter, is.Cert.NotAfter.Add(-r.cfg.RenewBefore))
}

func newSigningKey(cert *x509.Certificate, key crypto.Signer, notAfter, renewAt time.Time) (*signingKey, error) {
	spki, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("encoding the OCSP signing key: %w", err)
	}
	var info struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if _, err := asn1.Unmarshal(spki, &info); err != nil {
		return nil, fmt.Errorf("decoding the OCSP signing key: %w", err)
	}
	sum := sha1.Sum(info.PublicKey.RightAlign()) // RFC 6960 section 4.2.1: KeyHash is SHA-1
	return &signingKey{cert: cert, key: key, keyHash: sum[:], notAfter: notAfter, renewAt: renewAt}, nil
}
