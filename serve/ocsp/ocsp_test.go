package ocsp

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	xocsp "golang.org/x/crypto/ocsp"

	"minica/ca"
	"minica/internal/certlint"
	"minica/revoke"
	"minica/serve/internal/etag"
	"minica/serve/internal/servetest"
)

// testClock is a clock that tests move by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

var testStart = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// newTestCA creates a CA on a test clock and returns it with its key.
func newTestCA(t testing.TB) (*ca.CA, crypto.Signer, *testClock) {
	t.Helper()
	clock := &testClock{t: testStart}
	c, err := ca.Init(t.TempDir()+"/ca", ca.InitOptions{CommonName: "Test Root", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Now = clock.Now
	signer, err := c.LoadSigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, signer, clock
}

func newTestResponder(t testing.TB, cfg Config) *Responder {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	return r
}

func issue(t testing.TB, c *ca.CA, signer crypto.Signer, name string) *x509.Certificate {
	t.Helper()
	return servetest.Issue(t, c, signer, name)
}

// unrecorded signs a leaf with the CA key by hand: a serial minica never
// issued.
func unrecorded(t testing.TB, c *ca.CA, signer crypto.Signer) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(0x5eed), Subject: pkix.Name{CommonName: "stranger"},
		NotBefore: c.Now().Add(-time.Hour), NotAfter: c.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(nil, tmpl, c.Cert, signer.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func request(t testing.TB, cert, issuer *x509.Certificate, h crypto.Hash) []byte {
	t.Helper()
	return servetest.OCSPRequest(t, cert, issuer, h)
}

// withNonce adds a nonce extension to a request.
func withNonce(t testing.TB, der, nonce []byte) []byte {
	t.Helper()
	var req ocspRequest
	if _, err := asn1.Unmarshal(der, &req); err != nil {
		t.Fatal(err)
	}
	v, _ := asn1.Marshal(nonce)
	req.TBSRequest.Extensions = append(req.TBSRequest.Extensions, pkix.Extension{Id: oidNonce, Value: v})
	out, err := asn1.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func post(t testing.TB, h http.Handler, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	return servetest.PostOCSP(t, h, body)
}

// get sends GET target, a URL path as on the wire (escaped); one without a
// leading slash is taken as an already unescaped path, as a handler mounted
// under http.StripPrefix sees it.
func get(t testing.TB, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	var req *http.Request
	if strings.HasPrefix(target, "/") {
		req = httptest.NewRequest(http.MethodGet, target, nil)
	} else {
		req = httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL = &url.URL{Path: target}
	}
	h.ServeHTTP(rec, req)
	return rec
}

// parse checks an OCSP response to cert's request: HTTP 200, signed by a
// responder the issuer certified (or the issuer itself).
func parse(t testing.TB, rec *httptest.ResponseRecorder, cert, issuer *x509.Certificate) *xocsp.Response {
	t.Helper()
	return servetest.ParseOCSP(t, rec, cert, issuer)
}

func TestOCSPStatuses(t *testing.T) { bothFrontEnds(t, testOCSPStatuses) }

func testOCSPStatuses(t *testing.T, front frontEnd) {
	c, signer, clock := newTestCA(t)
	alice := issue(t, c, signer, "alice")
	bob := issue(t, c, signer, "bob")
	carol := issue(t, c, signer, "carol")
	hold := issue(t, c, signer, "hold")
	stranger := unrecorded(t, c, signer)
	clock.Advance(time.Hour)
	if _, err := c.Revoke(bob.SerialNumber, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Revoke(carol.SerialNumber, revoke.Unspecified); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Revoke(hold.SerialNumber, revoke.CertificateHold); err != nil {
		t.Fatal(err)
	}
	revokedAt := clock.Now()
	clock.Advance(time.Minute)
	r := newTestResponder(t, Config{CA: c, Signer: signer})
	fh := front(t, r)
	now := clock.Now()
	tests := []struct {
		name       string
		cert       *x509.Certificate
		status     int
		reason     int
		expiredNow bool
	}{
		{name: "valid", cert: alice, status: xocsp.Good},
		{name: "keyCompromise", cert: bob, status: xocsp.Revoked, reason: xocsp.KeyCompromise},
		{name: "unspecified", cert: carol, status: xocsp.Revoked, reason: xocsp.Unspecified},
		{name: "certificateHold", cert: hold, status: xocsp.Revoked, reason: xocsp.CertificateHold},
		{name: "never issued", cert: stranger, status: xocsp.Unknown},
	}
	for _, tt := range tests {
		for _, h := range []crypto.Hash{crypto.SHA1, crypto.SHA256} {
			t.Run(tt.name+"/"+h.String(), func(t *testing.T) {
				der := request(t, tt.cert, c.Cert, h)
				for _, form := range []string{"POST", "GET"} {
					var rec *httptest.ResponseRecorder
					if form == "POST" {
						rec = post(t, fh, der)
					} else {
						rec = get(t, fh, "/ocsp/"+url.PathEscape(base64.StdEncoding.EncodeToString(der)))
					}
					resp := parse(t, rec, tt.cert, c.Cert)
					if resp.Status != tt.status || resp.SerialNumber.Cmp(tt.cert.SerialNumber) != 0 {
						t.Errorf("%s: status %d for serial %x; want %d for %x", form, resp.Status, resp.SerialNumber, tt.status, tt.cert.SerialNumber)
					}
					if tt.status == xocsp.Revoked && (!resp.RevokedAt.Equal(revokedAt) || resp.RevocationReason != tt.reason) {
						t.Errorf("%s: revoked at %v (reason %d); want %v (reason %d)", form, resp.RevokedAt, resp.RevocationReason, revokedAt, tt.reason)
					}
					if !resp.ThisUpdate.Equal(now) || !resp.NextUpdate.Equal(now.Add(DefaultResponseValidity)) || !resp.ProducedAt.Equal(now) {
						t.Errorf("%s: produced %v, thisUpdate %v, nextUpdate %v; want %v, %v, %v", form, resp.ProducedAt, resp.ThisUpdate, resp.NextUpdate, now, now, now.Add(DefaultResponseValidity))
					}
					if resp.Certificate == nil || !slices.Contains(resp.Certificate.ExtKeyUsage, x509.ExtKeyUsageOCSPSigning) {
						t.Errorf("%s: responder certificate %v; want a delegated OCSPSigning one", form, resp.Certificate)
					}
					if resp.IssuerHash != h {
						t.Errorf("%s: CertID hash %v; want the request's %v", form, resp.IssuerHash, h)
					}
				}
			})
		}
	}
	t.Run("responder certificate", func(t *testing.T) {
		recs, err := c.RecordsByName(ResponderName)
		if err != nil || len(recs) != 1 || recs[0].Profile != ca.OCSP {
			t.Fatalf("records of %s: %v, %v; want one of profile ocsp", ResponderName, recs, err)
		}
		leaf, err := c.LoadLeaf(recs[0])
		if err != nil {
			t.Fatal(err)
		}
		certlint.Certificate(t, leaf.Cert.Raw)
		if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: certPool(c.Cert), CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageOCSPSigning}}); err != nil {
			t.Errorf("responder certificate does not verify for OCSPSigning: %v", err)
		}
	})
}

func certPool(certs ...*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

// responseNonce returns the nonce in the responseExtensions of a response.
func responseNonce(t testing.TB, der []byte) []byte {
	t.Helper()
	var resp ocspResponse
	if _, err := asn1.Unmarshal(der, &resp); err != nil {
		t.Fatal(err)
	}
	var basic basicResponse
	if _, err := asn1.Unmarshal(resp.Bytes.Response, &basic); err != nil {
		t.Fatal(err)
	}
	var data responseData
	if _, err := asn1.Unmarshal(basic.TBS.FullBytes, &data); err != nil {
		t.Fatal(err)
	}
	for _, e := range data.Extensions {
		if e.Id.Equal(oidNonce) {
			var v []byte
			if _, err := asn1.Unmarshal(e.Value, &v); err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	return nil
}

func TestOCSPNonceEchoedAndNotCached(t *testing.T) { bothFrontEnds(t, testOCSPNonceEchoedAndNotCached) }

func testOCSPNonceEchoedAndNotCached(t *testing.T, front frontEnd) {
	c, signer, _ := newTestCA(t)
	alice := issue(t, c, signer, "alice")
	r := newTestResponder(t, Config{CA: c, Signer: signer})
	h := front(t, r)
	plain := request(t, alice, c.Cert, crypto.SHA1)
	first := post(t, h, plain)
	if n := responseNonce(t, first.Body.Bytes()); n != nil {
		t.Errorf("response to a request without nonce has nonce %x", n)
	}
	for _, nonce := range [][]byte{bytes.Repeat([]byte{1}, 16), bytes.Repeat([]byte{2}, 32), {3}} {
		rec := post(t, h, withNonce(t, plain, nonce))
		if resp := parse(t, rec, alice, c.Cert); resp.Status != xocsp.Good {
			t.Errorf("nonce %x: status %d; want good", nonce, resp.Status)
		}
		if got := responseNonce(t, rec.Body.Bytes()); !bytes.Equal(got, nonce) {
			t.Errorf("nonce %x echoed as %x", nonce, got)
		}
		if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
			t.Errorf("Cache-Control %q; want no-store", cc)
		}
	}
	if got := r.hits.Load(); got != 0 {
		t.Errorf("%d cache hits; want 0: nonce responses are fresh", got)
	}
	if again := post(t, h, plain); !bytes.Equal(again.Body.Bytes(), first.Body.Bytes()) || r.hits.Load() != 1 {
		t.Errorf("the plain request again: cache hits %d, same bytes %v; want 1, true", r.hits.Load(), bytes.Equal(again.Body.Bytes(), first.Body.Bytes()))
	}
}

func TestOCSPCacheUntilCRLChanged(t *testing.T) { bothFrontEnds(t, testOCSPCacheUntilCRLChanged) }

func testOCSPCacheUntilCRLChanged(t *testing.T, front frontEnd) {
	c, signer, clock := newTestCA(t)
	alice := issue(t, c, signer, "alice")
	r := newTestResponder(t, Config{CA: c, Signer: signer})
	h := front(t, r)
	der := request(t, alice, c.Cert, crypto.SHA1)
	if resp := parse(t, post(t, h, der), alice, c.Cert); resp.Status != xocsp.Good {
		t.Fatalf("status %d; want good", resp.Status)
	}
	if _, err := c.Revoke(alice.SerialNumber, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if resp := parse(t, post(t, h, der), alice, c.Cert); resp.Status != xocsp.Good || r.hits.Load() != 1 {
		t.Errorf("before CRLChanged: status %d, cache hits %d; want the cached good, 1", resp.Status, r.hits.Load())
	}
	r.CRLChanged()
	if resp := parse(t, post(t, h, der), alice, c.Cert); resp.Status != xocsp.Revoked || r.hits.Load() != 1 {
		t.Errorf("after CRLChanged: status %d, cache hits %d; want revoked, 1", resp.Status, r.hits.Load())
	}
	// Past half of its validity a cached response is signed anew.
	bob := issue(t, c, signer, "bob")
	der = request(t, bob, c.Cert, crypto.SHA1)
	first := parse(t, post(t, h, der), bob, c.Cert)
	clock.Advance(DefaultResponseValidity/2 + time.Second)
	second := parse(t, post(t, h, der), bob, c.Cert)
	if !second.ThisUpdate.After(first.ThisUpdate) {
		t.Errorf("after half the validity: thisUpdate %v; want after %v", second.ThisUpdate, first.ThisUpdate)
	}
}

func TestOCSPRefusesBadRequests(t *testing.T) { bothFrontEnds(t, testOCSPRefusesBadRequests) }

func testOCSPRefusesBadRequests(t *testing.T, front frontEnd) {
	c, signer, _ := newTestCA(t)
	alice := issue(t, c, signer, "alice")
	r := newTestResponder(t, Config{CA: c, Signer: signer})
	h := front(t, r)
	good := request(t, alice, c.Cert, crypto.SHA1)
	other, otherKey, _ := newTestCA(t)
	foreign := request(t, issue(t, other, otherKey, "eve"), other.Cert, crypto.SHA1)
	var two ocspRequest
	asn1.Unmarshal(good, &two)
	two.TBSRequest.RequestList = append(two.TBSRequest.RequestList, two.TBSRequest.RequestList[0])
	twoDER, _ := asn1.Marshal(two)
	var md5 ocspRequest
	asn1.Unmarshal(good, &md5)
	md5.TBSRequest.RequestList[0].CertID.Raw = nil
	md5.TBSRequest.RequestList[0].CertID.HashAlgorithm.Algorithm = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 5}
	md5DER, _ := asn1.Marshal(md5)
	tests := []struct {
		name string
		body []byte
		want []byte
	}{
		{name: "empty", body: nil, want: xocsp.MalformedRequestErrorResponse},
		{name: "garbage", body: []byte("GET / HTTP/1.1\r\n"), want: xocsp.MalformedRequestErrorResponse},
		{name: "truncated", body: good[:len(good)-3], want: xocsp.MalformedRequestErrorResponse},
		{name: "trailing data", body: append(slices.Clone(good), 0), want: xocsp.MalformedRequestErrorResponse},
		{name: "oversized", body: append(slices.Clone(good), make([]byte, MaxRequest)...), want: xocsp.MalformedRequestErrorResponse},
		{name: "two certificates", body: twoDER, want: xocsp.MalformedRequestErrorResponse},
		{name: "md5", body: md5DER, want: xocsp.MalformedRequestErrorResponse},
		{name: "empty nonce", body: withNonce(t, good, nil), want: xocsp.MalformedRequestErrorResponse},
		{name: "33-byte nonce", body: withNonce(t, good, make([]byte, 33)), want: xocsp.MalformedRequestErrorResponse},
		{name: "another issuer", body: foreign, want: xocsp.UnauthorizedErrorResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := post(t, h, tt.body)
			if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), tt.want) {
				t.Errorf("HTTP %d, body %x; want 200, %x", rec.Code, rec.Body.Bytes(), tt.want)
			}
		})
	}
	for _, path := range []string{"/ocsp/", "/ocsp/%21%21", "/ocsp/" + strings.Repeat("A", 8<<10), "/ocsp/" + base64.StdEncoding.EncodeToString([]byte("hello"))} {
		if rec := get(t, h, path); !bytes.Equal(rec.Body.Bytes(), xocsp.MalformedRequestErrorResponse) {
			t.Errorf("GET %.40q: body %x; want malformedRequest", path, rec.Body.Bytes())
		}
	}
	for _, method := range []string{http.MethodPut, http.MethodDelete, http.MethodOptions, "BREW"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/ocsp", bytes.NewReader(good)))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD, POST" {
			t.Errorf("%s: HTTP %d, Allow %q; want 405, GET, HEAD, POST", method, rec.Code, rec.Header().Get("Allow"))
		}
	}
	// Random bytes and random mutations of a good request: never a panic,
	// always an OCSP response.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		body := slices.Clone(good)
		if i%2 == 0 {
			body = make([]byte, rng.IntN(200))
			for j := range body {
				body[j] = byte(rng.UintN(256))
			}
		} else {
			body[rng.IntN(len(body))] ^= byte(1 + rng.UintN(255))
		}
		rec := post(t, h, body)
		if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
			t.Fatalf("mutation %d (%x): HTTP %d, %d bytes", i, body, rec.Code, rec.Body.Len())
		}
	}
}

func TestOCSPHeadAndGetHeaders(t *testing.T) { bothFrontEnds(t, testOCSPHeadAndGetHeaders) }

func testOCSPHeadAndGetHeaders(t *testing.T, front frontEnd) {
	c, signer, clock := newTestCA(t)
	c.SetOCSPURL("http://pki.example.com/status/")
	alice := issue(t, c, signer, "alice")
	r := newTestResponder(t, Config{CA: c, Signer: signer})
	h := front(t, r)
	b64 := base64.StdEncoding.EncodeToString(request(t, alice, c.Cert, crypto.SHA1))
	for _, path := range []string{"/ocsp/" + b64, "/status/" + b64, "/" + b64, b64} {
		rec := get(t, h, path)
		parse(t, rec, alice, c.Cert)
		h := rec.Header()
		if h.Get("Cache-Control") != "max-age=300, public, no-transform, must-revalidate" ||
			h.Get("Last-Modified") != clock.Now().Format(http.TimeFormat) || h.Get("Expires") != clock.Now().Add(time.Hour).Format(http.TimeFormat) ||
			!strings.HasPrefix(h.Get("ETag"), `"sha256:`) {
			t.Errorf("GET %.20s…: headers %v", path, h)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/ocsp/"+url.PathEscape(b64), nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/ocsp-response" {
		t.Errorf("HEAD: HTTP %d, Content-Type %q; want 200 application/ocsp-response", rec.Code, rec.Header().Get("Content-Type"))
	}
}

func TestOCSPResponderRenewal(t *testing.T) {
	c, signer, clock := newTestCA(t)
	alice := issue(t, c, signer, "alice")
	der := request(t, alice, c.Cert, crypto.SHA1)
	r := newTestResponder(t, Config{CA: c, Signer: signer})
	first := parse(t, post(t, r, der), alice, c.Cert).Certificate
	if got, want := first.NotAfter.Sub(first.NotBefore), ca.DefaultOCSPResponderValidity; got != want {
		t.Errorf("responder lifetime %v; want %v", got, want)
	}
	// A restart reuses the responder certificate.
	if again := parse(t, post(t, newTestResponder(t, Config{CA: c, Signer: signer}), der), alice, c.Cert).Certificate; !again.Equal(first) {
		t.Errorf("a new responder issued serial %x; want the recorded %x reused", again.SerialNumber, first.SerialNumber)
	}
	// Responses never outlive their responder certificate.
	clock.Advance(ca.DefaultOCSPResponderValidity/2 - 30*time.Minute)
	resp := parse(t, post(t, r, der), alice, c.Cert)
	if !resp.Certificate.Equal(first) || resp.NextUpdate.After(first.NotAfter) {
		t.Errorf("before renewal: responder %x, nextUpdate %v; want %x, not after %v", resp.Certificate.SerialNumber, resp.NextUpdate, first.SerialNumber, first.NotAfter)
	}
	clock.Advance(time.Hour)
	resp = parse(t, post(t, r, der), alice, c.Cert)
	second := resp.Certificate
	if second.Equal(first) || !second.NotBefore.After(first.NotBefore) {
		t.Fatalf("past renewal time: responder %x; want a new one", second.SerialNumber)
	}
	if !resp.ThisUpdate.Equal(clock.Now()) {
		t.Errorf("past renewal: thisUpdate %v; want a fresh response at %v", resp.ThisUpdate, clock.Now())
	}
	recs, err := c.RecordsByName(ResponderName)
	if err != nil || len(recs) != 2 || recs[1].Serial != ca.SerialHex(second.SerialNumber) || recs[1].Profile != ca.OCSP {
		t.Errorf("records after renewal: %v, %v; want two, the newest %x of profile ocsp", recs, err, second.SerialNumber)
	}
	// Without the CA key the last responder certificate serves until it
	// expires, then every answer is tryLater.
	var logged strings.Builder
	noKey := newTestResponder(t, Config{CA: c, Log: &logged})
	if got := parse(t, post(t, noKey, der), alice, c.Cert).Certificate; !got.Equal(second) {
		t.Errorf("without the CA key: responder %x; want %x", got.SerialNumber, second.SerialNumber)
	}
	clock.Advance(ca.DefaultOCSPResponderValidity)
	if rec := post(t, noKey, der); !bytes.Equal(rec.Body.Bytes(), xocsp.TryLaterErrorResponse) {
		t.Errorf("without the CA key, responder expired: body %x; want tryLater", rec.Body.Bytes())
	}
	logged.Reset()
	late := newTestResponder(t, Config{CA: c, Log: &logged})
	if rec := post(t, late, der); !bytes.Equal(rec.Body.Bytes(), xocsp.TryLaterErrorResponse) ||
		!strings.Contains(logged.String(), " ocsp-no-signer error=\"no valid OCSP responder certificate, and no CA key to issue one") {
		t.Errorf("started without the CA key or a valid responder: body %x, log %q; want tryLater and an ocsp-no-signer line", rec.Body.Bytes(), logged.String())
	}
}

func TestOCSPSignWithCAKey(t *testing.T) {
	c, signer, _ := newTestCA(t)
	alice := issue(t, c, signer, "alice")
	r := newTestResponder(t, Config{CA: c, Signer: signer, SignWithCAKey: true})
	resp := parse(t, post(t, r, request(t, alice, c.Cert, crypto.SHA1)), alice, c.Cert)
	if resp.Status != xocsp.Good || resp.Certificate != nil {
		t.Errorf("status %d, certificate %v; want good, none (signed by the CA)", resp.Status, resp.Certificate)
	}
	if recs, _ := c.RecordsByName(ResponderName); len(recs) != 0 {
		t.Errorf("%d responder certificates issued; want none", len(recs))
	}
	if _, err := New(Config{CA: c, SignWithCAKey: true}); err == nil || err.Error() != "creating OCSP responder: signing with the CA key needs the CA key" {
		t.Errorf("SignWithCAKey without the key: error %v", err)
	}
}

func TestOCSPMetrics(t *testing.T) {
	c, signer, _ := newTestCA(t)
	alice := issue(t, c, signer, "alice")
	bob := issue(t, c, signer, "bob")
	c.Revoke(bob.SerialNumber, revoke.Superseded)
	r := newTestResponder(t, Config{CA: c, Signer: signer})
	post(t, r, request(t, alice, c.Cert, crypto.SHA1))
	post(t, r, request(t, alice, c.Cert, crypto.SHA1))
	post(t, r, request(t, bob, c.Cert, crypto.SHA1))
	post(t, r, request(t, unrecorded(t, c, signer), c.Cert, crypto.SHA1))
	post(t, r, []byte("junk"))
	var b strings.Builder
	r.WriteMetrics(&b)
	for _, want := range []string{
		"# TYPE minica_serve_ocsp_responses_total counter\n",
		`minica_serve_ocsp_responses_total{status="good"} 2` + "\n",
		`minica_serve_ocsp_responses_total{status="revoked"} 1` + "\n",
		`minica_serve_ocsp_responses_total{status="unknown"} 1` + "\n",
		`minica_serve_ocsp_responses_total{status="malformed"} 1` + "\n",
		`minica_serve_ocsp_responses_total{status="unauthorized"} 0` + "\n",
		"minica_serve_ocsp_cache_hits_total 1\n",
		"minica_serve_ocsp_responder_expiry_seconds 345300\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, b.String())
		}
	}
}

// Requests from many goroutines, while CRLs change and the responder
// certificate is renewed, all get a verified answer (run with -race).
func TestOCSPConcurrent(t *testing.T) {
	c, signer, clock := newTestCA(t)
	alice := issue(t, c, signer, "alice")
	r := newTestResponder(t, Config{CA: c, Signer: signer})
	der := request(t, alice, c.Cert, crypto.SHA1)
	var wg sync.WaitGroup
	errs := make(chan string, 8*50)
	for range 8 {
		wg.Go(func() {
			for range 50 {
				rec := httptest.NewRecorder()
				r.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/ocsp", bytes.NewReader(der)))
				resp, err := xocsp.ParseResponseForCert(rec.Body.Bytes(), alice, c.Cert)
				if err != nil || resp.Status != xocsp.Good {
					errs <- fmt.Sprint(err)
				}
			}
		})
	}
	for range 20 {
		r.CRLChanged()
		clock.Advance(ca.DefaultOCSPResponderValidity / 40)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("a concurrent request: %s", e)
	}
}

// BenchmarkOCSP measures a response from the cache, and one signed afresh
// (a nonce), for a good serial.
func BenchmarkOCSP(b *testing.B) {
	c, signer, _ := newTestCA(b)
	alice := issue(b, c, signer, "alice")
	r := newTestResponder(b, Config{CA: c, Signer: signer})
	plain := request(b, alice, c.Cert, crypto.SHA1)
	for _, bc := range []struct {
		name string
		der  []byte
	}{{"cached", plain}, {"nonce", withNonce(b, plain, bytes.Repeat([]byte{7}, 16))}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				r.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/ocsp", bytes.NewReader(bc.der)))
				if rec.Body.Len() < 100 {
					b.Fatalf("response of %d bytes", rec.Body.Len())
				}
			}
		})
	}
}

// A revoked responder certificate is replaced at the next CRL change.
func TestOCSPRevokedResponderReplaced(t *testing.T) {
	c, signer, clock := newTestCA(t)
	alice := issue(t, c, signer, "alice")
	der := request(t, alice, c.Cert, crypto.SHA1)
	r := newTestResponder(t, Config{CA: c, Signer: signer})
	first := parse(t, post(t, r, der), alice, c.Cert).Certificate
	r.CRLChanged() // a CRL change with the responder valid keeps it
	if again := parse(t, post(t, r, der), alice, c.Cert).Certificate; !again.Equal(first) {
		t.Fatalf("after a CRL change: responder %x; want %x kept", again.SerialNumber, first.SerialNumber)
	}
	if _, err := c.Revoke(first.SerialNumber, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	r.CRLChanged()
	next := parse(t, post(t, r, der), alice, c.Cert).Certificate
	if next.Equal(first) {
		t.Fatalf("after revoking the responder certificate: still signed by it")
	}
	if recs, _ := c.RecordsByName(ResponderName); len(recs) != 2 {
		t.Errorf("%d responder certificates recorded; want 2", len(recs))
	}
	// Without the CA key, a revoked responder certificate stops signing.
	noKey := newTestResponder(t, Config{CA: c})
	parse(t, post(t, noKey, der), alice, c.Cert)
	if _, err := c.Revoke(next.SerialNumber, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	noKey.CRLChanged()
	if rec := post(t, noKey, der); !bytes.Equal(rec.Body.Bytes(), xocsp.TryLaterErrorResponse) {
		t.Errorf("without the CA key, responder revoked: body %x; want tryLater", rec.Body.Bytes())
	}
}

// A cache in front revalidates a GET answer with its ETag: the same answer
// is a 304 without a body; after a CRL change (a new answer) it is a 200.
func TestOCSPGetRevalidates(t *testing.T) { bothFrontEnds(t, testOCSPGetRevalidates) }

func testOCSPGetRevalidates(t *testing.T, front frontEnd) {
	c, signer, clock := newTestCA(t)
	alice := issue(t, c, signer, "alice")
	r := newTestResponder(t, Config{CA: c, Signer: signer})
	h := front(t, r)
	path := "/ocsp/" + url.PathEscape(base64.StdEncoding.EncodeToString(request(t, alice, c.Cert, crypto.SHA1)))
	first := get(t, h, path)
	tag := first.Header().Get("ETag")
	if first.Code != http.StatusOK || tag != etag.Of(first.Body.Bytes()) {
		t.Fatalf("GET: HTTP %d, ETag %q; want 200 and the digest of the body", first.Code, tag)
	}
	revalidate := func(inm string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("If-None-Match", inm)
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, inm := range []string{tag, `"other", ` + tag, "W/" + tag, "*"} {
		rec := revalidate(inm)
		if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 || rec.Header().Get("ETag") != tag ||
			!strings.HasPrefix(rec.Header().Get("Cache-Control"), "max-age=") {
			t.Errorf("If-None-Match %s: HTTP %d, %d bytes, headers %v; want 304, no body, the ETag and max-age", inm, rec.Code, rec.Body.Len(), rec.Header())
		}
	}
	if rec := revalidate(`"sha256:00"`); rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), first.Body.Bytes()) {
		t.Errorf("another ETag: HTTP %d; want 200 with the cached answer", rec.Code)
	}
	if _, err := c.Revoke(alice.SerialNumber, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	r.CRLChanged()
	rec := revalidate(tag)
	if rec.Code != http.StatusOK || parse(t, rec, alice, c.Cert).Status != xocsp.Revoked || rec.Header().Get("ETag") == tag {
		t.Errorf("after a revocation and a CRL change: HTTP %d, ETag %q; want 200, revoked, a new ETag", rec.Code, rec.Header().Get("ETag"))
	}
}

// Signatures made on demand are bounded: with every signing slot taken, a
// request that needs one (a nonce) gets tryLater after the wait, while a
// cached answer is still served; once a slot frees up it is signed.
func TestOCSPSigningBounded(t *testing.T) {
	c, signer, _ := newTestCA(t)
	alice := issue(t, c, signer, "alice")
	r := newTestResponder(t, Config{CA: c, Signer: signer})
	plain := request(t, alice, c.Cert, crypto.SHA1)
	cached := post(t, r, plain).Body.Bytes()
	r.signWait = 10 * time.Millisecond
	for range cap(r.signSlots) {
		r.signSlots <- struct{}{}
	}
	nonced := withNonce(t, plain, bytes.Repeat([]byte{7}, 16))
	if rec := post(t, r, nonced); !bytes.Equal(rec.Body.Bytes(), xocsp.TryLaterErrorResponse) {
		t.Errorf("a nonce with every slot busy: %x; want tryLater", rec.Body.Bytes())
	}
	if rec := post(t, r, plain); !bytes.Equal(rec.Body.Bytes(), cached) {
		t.Errorf("a cached request with every slot busy: not the cached answer")
	}
	<-r.signSlots
	if resp := parse(t, post(t, r, nonced), alice, c.Cert); resp.Status != xocsp.Good {
		t.Errorf("a nonce once a slot is free: status %d; want good", resp.Status)
	}
	if !servetest.HasLine(metricsOf(r), `minica_serve_ocsp_responses_total{status="try_later"} 1`) {
		t.Errorf("metrics lack one tryLater:\n%s", metricsOf(r))
	}
}

func metricsOf(r *Responder) string {
	var b strings.Builder
	r.WriteMetrics(&b)
	return b.String()
}
