package renew

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"minica/ca"
	"minica/formats"
	"minica/internal/testca"
	"minica/revoke"
	"minica/serve/internal/servetest"
)

// renewFixture is a CA (servetest.Fixture) with a Renewer on a handle of
// its own, judging by the CRL published at start (one hour), and a client
// certificate "svc" issued at start for 30 minutes.
type renewFixture struct {
	*servetest.Fixture
	rn   *Renewer
	cert *x509.Certificate
	key  crypto.Signer
}

var start = servetest.Start

func newRenewFixture(t *testing.T, mod func(*Config)) *renewFixture {
	t.Helper()
	rf := &renewFixture{Fixture: servetest.NewFixture(t)}
	rf.rn = rf.renewer(t, mod)
	rf.cert, rf.key = rf.issue(t, "svc", ca.Client, 30*time.Minute)
	return rf
}

// renewer returns a Renewer of the fixture's CA on a handle of its own, as
// serve makes one.
func (rf *renewFixture) renewer(t *testing.T, mod func(*Config)) *Renewer {
	t.Helper()
	pub, err := rf.CA.ReadPublishedCRL()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{CA: rf.Other(t), Signer: rf.Signer, Log: rf.Log, Now: rf.Clock.Now, LockTimeout: 50 * time.Millisecond,
		CRL: func() *revoke.CRL { return pub.CRL }}
	if mod != nil {
		mod(&cfg)
	}
	rn, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rn
}

// issue issues a certificate through the fixture's CA.
func (rf *renewFixture) issue(t *testing.T, name string, p ca.Profile, validity time.Duration) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	unlock, err := rf.CA.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	req := ca.Request{Name: name, Profile: p, Validity: validity, Emails: []string{name + "@example.com"}}
	if p == ca.Server {
		req.Emails, req.DNSNames = nil, []string{name + ".example.com"}
	}
	iss, err := rf.CA.Issue(rf.Signer, req)
	if err != nil {
		t.Fatal(err)
	}
	return iss.Cert, iss.Key
}

// csrFor returns a DER CSR for a new P-256 key with tmpl's fields.
func csrFor(t *testing.T, tmpl *x509.CertificateRequest) ([]byte, crypto.Signer) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

// sameIdentity is a CSR template asking for cert's identity.
func sameIdentity(cert *x509.Certificate) *x509.CertificateRequest {
	return &x509.CertificateRequest{RawSubject: cert.RawSubject, DNSNames: cert.DNSNames, EmailAddresses: cert.EmailAddresses, IPAddresses: cert.IPAddresses}
}

// post sends body to path over a simulated TLS connection presenting certs.
func (rf *renewFixture) post(t *testing.T, path, ctype string, body []byte, certs ...*x509.Certificate) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.RemoteAddr = "192.0.2.7:41000"
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.TLS = &tls.ConnectionState{PeerCertificates: certs}
	rec := httptest.NewRecorder()
	rf.rn.ServeHTTP(rec, req)
	return rec
}

// do sends a request without a body, and without TLS.
func (rf *renewFixture) do(t *testing.T, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	rf.rn.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

// metrics returns the Renewer's metrics, as serve's /metrics appends them.
func (rf *renewFixture) metrics(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	rf.rn.WriteMetrics(&b)
	return b.String()
}

type problem struct {
	Status int    `json:"status"`
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

func problemOf(t *testing.T, rec *httptest.ResponseRecorder) problem {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != ProblemType {
		t.Fatalf("Content-Type = %q; want %q (body %q)", ct, ProblemType, rec.Body)
	}
	var p problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if p.Status != rec.Code {
		t.Errorf("problem status %d; HTTP status %d", p.Status, rec.Code)
	}
	return p
}

func TestRenewIssuesSuccessor(t *testing.T) {
	rf := newRenewFixture(t, nil)
	der, key := csrFor(t, sameIdentity(rf.cert))
	for _, tc := range []struct {
		name, ctype string
		body        []byte
	}{
		{"der", CSRType, der},
		{"pem", PEMType, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rf.Clock.Set(rf.Clock.Now().Add(DefaultInterval)) // past the interval of the last renewal
			rec := rf.post(t, Path, tc.ctype, tc.body, rf.cert)
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != ChainType {
				t.Fatalf("POST %s = %d %q; want 200 %s", Path, rec.Code, rec.Body, ChainType)
			}
			certs, err := formats.ParseCertificates(rec.Body.Bytes())
			if err != nil || len(certs) != 2 {
				t.Fatalf("answer: %d certificates, %v; want the leaf and the CA", len(certs), err)
			}
			leaf := certs[0]
			if !certs[1].Equal(rf.CA.Cert) {
				t.Errorf("the chain is %q; want the CA", certs[1].Subject)
			}
			if err := formats.KeyMatchesCertificate(key, leaf); err != nil {
				t.Errorf("the successor is not for the CSR's key: %v", err)
			}
			if !bytes.Equal(leaf.RawSubject, rf.cert.RawSubject) || leaf.EmailAddresses[0] != "svc@example.com" {
				t.Errorf("successor subject %q, emails %v; want the predecessor's", leaf.Subject, leaf.EmailAddresses)
			}
			if got, want := leaf.NotAfter.Sub(leaf.NotBefore), rf.cert.NotAfter.Sub(rf.cert.NotBefore); got != want {
				t.Errorf("successor lifetime %s; want the predecessor's %s", got, want)
			}
			succ, err := rf.Other(t).Record(leaf.SerialNumber)
			if err != nil {
				t.Fatal(err)
			}
			if succ.RenewalOf != ca.SerialHex(rf.cert.SerialNumber) || succ.Name != "svc" {
				t.Errorf("successor record renewal_of %q name %q; want %s svc", succ.RenewalOf, succ.Name, ca.SerialHex(rf.cert.SerialNumber))
			}
			pred, _ := rf.Other(t).Record(rf.cert.SerialNumber)
			if pred.RenewedBy != succ.Serial {
				t.Errorf("predecessor renewed_by %q; want %s", pred.RenewedBy, succ.Serial)
			}
			if log := rf.Log.String(); !strings.Contains(log, " renewed name=svc serial="+succ.Serial+" old_serial="+pred.Serial) ||
				!strings.Contains(log, "client=192.0.2.7:41000") {
				t.Errorf("log lacks the renewal and who asked:\n%s", log)
			}
		})
	}
	if m := rf.metrics(t); !strings.Contains(m, "minica_serve_renewals_total 2\n") {
		t.Errorf("metrics lack minica_serve_renewals_total 2:\n%s", m)
	}
}

func TestRenewRefusals(t *testing.T) {
	foreign := testca.New(t, "Other CA")
	foreignCert, _ := foreign.Leaf(t, &x509.Certificate{Subject: pkix.Name{CommonName: "svc"},
		NotBefore: start.Add(-time.Hour), NotAfter: start.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	tests := []struct {
		name       string
		mod        func(*Config)
		setup      func(t *testing.T, rf *renewFixture) (path, ctype string, body []byte, certs []*x509.Certificate)
		wantStatus int
		wantReason string
		wantDetail string
	}{
		{name: "no client certificate", wantStatus: 403, wantReason: RefuseNoCertificate,
			setup: func(t *testing.T, rf *renewFixture) (string, string, []byte, []*x509.Certificate) {
				der, _ := csrFor(t, sameIdentity(rf.cert))
				return Path, CSRType, der, nil
			}},
		{name: "another CA", wantStatus: 403, wantReason: string(revoke.ReasonUnknownCA),
			setup: func(t *testing.T, rf *renewFixture) (string, string, []byte, []*x509.Certificate) {
				der, _ := csrFor(t, sameIdentity(foreignCert))
				return Path, CSRType, der, []*x509.Certificate{foreignCert}
			}},
		{name: "revoked", wantStatus: 403, wantReason: string(revoke.ReasonRevoked), wantDetail: "revoked at",
			setup: func(t *testing.T, rf *renewFixture) (string, string, []byte, []*x509.Certificate) {
				c := rf.Other(t)
				unlock, _ := c.Lock(time.Second)
				defer unlock()
				if _, err := c.Revoke(rf.cert.SerialNumber, revoke.KeyCompromise); err != nil {
					t.Fatal(err)
				}
				der, _ := csrFor(t, sameIdentity(rf.cert))
				return Path, CSRType, der, []*x509.Certificate{rf.cert}
			}},
		{name: "expired", wantStatus: 403, wantReason: string(revoke.ReasonExpired), wantDetail: "has expired",
			setup: func(t *testing.T, rf *renewFixture) (string, string, []byte, []*x509.Certificate) {
				rf.Clock.Set(rf.cert.NotAfter.Add(time.Second))
				der, _ := csrFor(t, sameIdentity(rf.cert))
				return Path, CSRType, der, []*x509.Certificate{rf.cert}
			}},
		{name: "expired beyond the grace", wantStatus: 403, wantReason: string(revoke.ReasonExpired), wantDetail: "renewal allows 10m past notAfter",
			mod: func(c *Config) { c.Grace = 10 * time.Minute },
			setup: func(t *testing.T, rf *renewFixture) (string, string, []byte, []*x509.Certificate) {
				rf.Clock.Set(rf.cert.NotAfter.Add(10*time.Minute + time.Second))
				der, _ := csrFor(t, sameIdentity(rf.cert))
				return Path, CSRType, der, []*x509.Certificate{rf.cert}
			}},
		{name: "another identity", wantStatus: 403, wantReason: RefuseIdentity, wantDetail: "subject",
			setup: func(t *testing.T, rf *renewFixture) (string, string, []byte, []*x509.Certificate) {
				der, _ := csrFor(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "admin"}})
				return Path, CSRType, der, []*x509.Certificate{rf.cert}
			}},
		{name: "another email", wantStatus: 403, wantReason: RefuseIdentity, wantDetail: "SANs",
			setup: func(t *testing.T, rf *renewFixture) (string, string, []byte, []*x509.Certificate) {
				der, _ := csrFor(t, &x509.CertificateRequest{RawSubject: rf.cert.RawSubject, EmailAddresses: []string{"root@example.com"}})
				return Path, CSRType, der, []*x509.Certificate{rf.cert}
			}},
		{name: "another key usage", wantStatus: 403, wantReason: RefuseKeyUsage, wantDetail: "serverAuth",
			setup: func(t *testing.T, rf *renewFixture) (string, string, []byte, []*x509.Certificate) {
				eku, _ := asn1.Marshal([]asn1.ObjectIdentifier{{1, 3, 6, 1, 5, 5, 7, 3, 1}})
				tmpl := sameIdentity(rf.cert)
				tmpl.ExtraExtensions = []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 37}, Value: eku}}
				der, _ := csrFor(t, tmpl)
				return Path, CSRType, der, []*x509.Certificate{rf.cert}
			}},
		{name: "CA:TRUE", wantStatus: 403, wantReason: RefuseCARequested, wantDetail: "CA:TRUE",
			setup: func(t *testing.T, rf *renewFixture) (string, string, []byte, []*x509.Certificate) {
				bc, _ := asn1.Marshal(struct{ IsCA bool }{true})
				tmpl := sameIdentity(rf.cert)
				tmpl.ExtraExtensions = []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 19}, Critical: true, Value: bc}}
				der, _ := csrFor(t, tmpl)
				return Path, CSRType, der, []*x509.Certificate{rf.cert}
			}},
		{name: "the old key", wantStatus: 403, wantReason: RefuseSameKey,
			setup: func(t *testing.T, rf *renewFixture) (string, string, []byte, []*x509.Certificate) {
				der, err := x509.CreateCertificateRequest(rand.Reader, sameIdentity(rf.cert), rf.key)
				if err != nil {
					t.Fatal(err)
				}
				return Path, CSRType, der, []*x509.Certificate{rf.cert}
			}},
		{name: "not a CSR", wantStatus: 400, wantReason: RefuseBadCSR,
			setup: func(t *testing.T, rf *renewFixture) (string, string, []byte, []*x509.Certificate) {
				return Path, CSRType, []byte("hello"), []*x509.Certificate{rf.cert}
			}},
		{name: "too large", wantStatus: 413, wantReason: RefuseTooLarge, mod: func(c *Config) { c.MaxCSR = 100 },
			setup: func(t *testing.T, rf *renewFixture) (string, string, []byte, []*x509.Certificate) {
				der, _ := csrFor(t, sameIdentity(rf.cert))
				return Path, CSRType, der, []*x509.Certificate{rf.cert}
			}},
		{name: "media type", wantStatus: 415, wantReason: RefuseMediaType,
			setup: func(t *testing.T, rf *renewFixture) (string, string, []byte, []*x509.Certificate) {
				der, _ := csrFor(t, sameIdentity(rf.cert))
				return Path, "application/json", der, []*x509.Certificate{rf.cert}
			}},
		// docs/serve.md names two media types: text/plain is neither.
		{name: "media type text/plain", wantStatus: 415, wantReason: RefuseMediaType,
			setup: func(t *testing.T, rf *renewFixture) (string, string, []byte, []*x509.Certificate) {
				der, _ := csrFor(t, sameIdentity(rf.cert))
				return Path, "text/plain", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), []*x509.Certificate{rf.cert}
			}},
		{name: "keygen off", wantStatus: 403, wantReason: RefuseKeygenOff,
			setup: func(t *testing.T, rf *renewFixture) (string, string, []byte, []*x509.Certificate) {
				return KeygenPath, "", nil, []*x509.Certificate{rf.cert}
			}},
		// The judge refuses it first: it is no client certificate.
		{name: "OCSP responder", wantStatus: 403, wantReason: string(revoke.ReasonWrongEKU),
			setup: func(t *testing.T, rf *renewFixture) (string, string, []byte, []*x509.Certificate) {
				unlock, _ := rf.CA.Lock(time.Second)
				iss, err := rf.CA.Issue(rf.Signer, ca.Request{Name: "minica-ocsp", Profile: ca.OCSP, Validity: time.Hour})
				unlock()
				if err != nil {
					t.Fatal(err)
				}
				der, _ := csrFor(t, sameIdentity(iss.Cert))
				return Path, CSRType, der, []*x509.Certificate{iss.Cert}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rf := newRenewFixture(t, tt.mod)
			path, ctype, body, certs := tt.setup(t, rf)
			rec := rf.post(t, path, ctype, body, certs...)
			p := problemOf(t, rec)
			if rec.Code != tt.wantStatus || p.Reason != tt.wantReason || !strings.Contains(p.Detail, tt.wantDetail) {
				t.Fatalf("POST = %d %+v; want %d reason %q detail containing %q", rec.Code, p, tt.wantStatus, tt.wantReason, tt.wantDetail)
			}
			if recs, _ := rf.Other(t).RecordsByName("svc"); len(recs) != 1 {
				t.Errorf("svc has %d records after a refusal; want 1", len(recs))
			}
			if !strings.Contains(rf.Log.String(), "renew-refused reason="+tt.wantReason) {
				t.Errorf("no renew-refused line in the log:\n%s", rf.Log.String())
			}
		})
	}
}

func TestRenewOutsideTLS(t *testing.T) {
	rf := newRenewFixture(t, nil)
	rec := rf.do(t, http.MethodPost, Path)
	if p := problemOf(t, rec); rec.Code != 403 || p.Reason != RefuseHTTPS {
		t.Errorf("POST over HTTP = %d %+v; want 403 %s", rec.Code, p, RefuseHTTPS)
	}
	rec = rf.do(t, http.MethodGet, Path)
	if p := problemOf(t, rec); rec.Code != 405 || p.Reason != RefuseMethod || rec.Header().Get("Allow") != "POST" {
		t.Errorf("GET = %d %+v; want 405 %s with Allow: POST", rec.Code, p, RefuseMethod)
	}
}

func TestRenewGrace(t *testing.T) {
	rf := newRenewFixture(t, func(c *Config) { c.Grace = 10 * time.Minute })
	rf.Clock.Set(rf.cert.NotAfter.Add(5 * time.Minute))
	der, _ := csrFor(t, sameIdentity(rf.cert))
	rec := rf.post(t, Path, CSRType, der, rf.cert)
	if rec.Code != 200 {
		t.Fatalf("POST 5m after notAfter with 10m of grace = %d %q; want 200", rec.Code, rec.Body)
	}
	if !strings.Contains(rf.Log.String(), "in_grace=true") {
		t.Errorf("the log does not say the renewal was in the grace period:\n%s", rf.Log.String())
	}
}

func TestRenewKeygen(t *testing.T) {
	rf := newRenewFixture(t, func(c *Config) { c.Keygen = true })
	rec := rf.post(t, KeygenPath, "", nil, rf.cert)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != PEMType {
		t.Fatalf("POST %s = %d %q; want 200 %s", KeygenPath, rec.Code, rec.Body, PEMType)
	}
	key, err := formats.ParsePrivateKeyPEM(rec.Body.Bytes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := formats.ParseCertificates(rec.Body.Bytes())
	if err != nil || len(certs) != 2 {
		t.Fatalf("answer: %d certificates, %v", len(certs), err)
	}
	if err := formats.KeyMatchesCertificate(key, certs[0]); err != nil {
		t.Error(err)
	}
	if formats.KeyMatchesCertificate(rf.key, certs[0]) == nil {
		t.Error("the new certificate has the old key")
	}
}

func TestRenewLimits(t *testing.T) {
	t.Run("same certificate again", func(t *testing.T) {
		rf := newRenewFixture(t, nil)
		der, _ := csrFor(t, sameIdentity(rf.cert))
		if rec := rf.post(t, Path, CSRType, der, rf.cert); rec.Code != 200 {
			t.Fatalf("first renewal = %d %q", rec.Code, rec.Body)
		}
		der, _ = csrFor(t, sameIdentity(rf.cert))
		rec := rf.post(t, Path, CSRType, der, rf.cert)
		if p := problemOf(t, rec); rec.Code != 429 || p.Reason != RefuseRecentlyRenewed || rec.Header().Get("Retry-After") != "60" {
			t.Fatalf("second renewal at once = %d %+v Retry-After %q; want 429 %s 60", rec.Code, p, rec.Header().Get("Retry-After"), RefuseRecentlyRenewed)
		}
		// A client that lost the answer renews the same certificate again
		// once the interval has passed.
		rf.Clock.Set(rf.Clock.Now().Add(DefaultInterval))
		if rec := rf.post(t, Path, CSRType, der, rf.cert); rec.Code != 200 {
			t.Fatalf("renewal after the interval = %d %q; want 200", rec.Code, rec.Body)
		}
	})
	// Two Renewers on one CA (two serves, or replicas on one database):
	// the interval is the store's, not one process's.
	t.Run("same certificate at another serve", func(t *testing.T) {
		rf := newRenewFixture(t, nil)
		rn2 := rf.renewer(t, nil)
		der, _ := csrFor(t, sameIdentity(rf.cert))
		if rec := rf.post(t, Path, CSRType, der, rf.cert); rec.Code != 200 {
			t.Fatalf("renewal at the first serve = %d %q", rec.Code, rec.Body)
		}
		post2 := func() *httptest.ResponseRecorder {
			der, _ := csrFor(t, sameIdentity(rf.cert))
			req := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(der))
			req.Header.Set("Content-Type", CSRType)
			req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{rf.cert}}
			rec := httptest.NewRecorder()
			rn2.ServeHTTP(rec, req)
			return rec
		}
		rf.Clock.Set(rf.Clock.Now().Add(15 * time.Second))
		rec := post2()
		if p := problemOf(t, rec); rec.Code != 429 || p.Reason != RefuseRecentlyRenewed || rec.Header().Get("Retry-After") != "45" {
			t.Fatalf("renewal at the second serve 15s later = %d %+v Retry-After %q; want 429 %s 45", rec.Code, p, rec.Header().Get("Retry-After"), RefuseRecentlyRenewed)
		}
		if recs, _ := rf.Other(t).RecordsByName("svc"); len(recs) != 2 {
			t.Errorf("svc has %d records; want 2 (one renewal)", len(recs))
		}
		rf.Clock.Set(rf.Clock.Now().Add(45 * time.Second))
		if rec := post2(); rec.Code != 200 {
			t.Fatalf("renewal at the second serve after the interval = %d %q; want 200", rec.Code, rec.Body)
		}
	})
	t.Run("rate", func(t *testing.T) {
		rf := newRenewFixture(t, func(c *Config) { c.Rate, c.Burst = 1, 1 })
		other, _ := rf.issue(t, "svc2", ca.Server, time.Hour)
		// A client the judge refuses takes no token from the others.
		stranger, _ := testca.New(t, "Other CA").Leaf(t, &x509.Certificate{Subject: pkix.Name{CommonName: "svc"},
			NotBefore: start.Add(-time.Hour), NotAfter: start.Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		der, _ := csrFor(t, sameIdentity(stranger))
		for range 3 {
			if rec := rf.post(t, Path, CSRType, der, stranger); rec.Code != 403 {
				t.Fatalf("a stranger's renewal = %d %q; want 403", rec.Code, rec.Body)
			}
		}
		der, _ = csrFor(t, sameIdentity(rf.cert))
		if rec := rf.post(t, Path, CSRType, der, rf.cert); rec.Code != 200 {
			t.Fatalf("first renewal = %d %q", rec.Code, rec.Body)
		}
		der, _ = csrFor(t, sameIdentity(other))
		rec := rf.post(t, Path, CSRType, der, other)
		if p := problemOf(t, rec); rec.Code != 429 || p.Reason != RefuseRateLimited || rec.Header().Get("Retry-After") != "1" {
			t.Fatalf("second renewal = %d %+v; want 429 %s", rec.Code, p, RefuseRateLimited)
		}
		rf.Clock.Set(rf.Clock.Now().Add(time.Second))
		if rec := rf.post(t, Path, CSRType, der, other); rec.Code != 200 {
			t.Fatalf("server certificate renewal a second later = %d %q; want 200", rec.Code, rec.Body)
		}
	})
}

// awaySigner is a CA key in a token that is gone: every signature fails
// and, as a token signer does, it says so through ca.SignerStatus.
type awaySigner struct{ crypto.Signer }

var errTokenAway = errors.New("CKR_DEVICE_REMOVED")

func (awaySigner) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	return nil, errTokenAway
}
func (awaySigner) Err() error                     { return errTokenAway }
func (awaySigner) Check() error                   { return errTokenAway }
func (awaySigner) Reopens() uint64                { return 0 }
func (awaySigner) SetLog(func(string, ...string)) {}

// While the CA key's token cannot sign, a renewal is answered 503 with
// Retry-After (the client retries; the signer opens the token again by
// itself), not 500 as a fault of the request or of serve, and nothing is
// issued.
func TestRenewSignerUnavailable(t *testing.T) {
	rf := newRenewFixture(t, nil)
	rn := rf.renewer(t, func(c *Config) { c.Signer = awaySigner{rf.Signer} })
	der, _ := csrFor(t, sameIdentity(rf.cert))
	rf.Clock.Set(rf.Clock.Now().Add(DefaultInterval))
	rf.rn = rn
	rec := rf.post(t, Path, CSRType, der, rf.cert)
	p := problemOf(t, rec)
	if rec.Code != http.StatusServiceUnavailable || p.Reason != RefuseSignerUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("POST %s with the token away = %d %+v, Retry-After %q; want 503 %s with Retry-After", Path, rec.Code, p, rec.Header().Get("Retry-After"), RefuseSignerUnavailable)
	}
	if !strings.Contains(p.Detail, "CKR_DEVICE_REMOVED") {
		t.Errorf("detail %q; want the token's error", p.Detail)
	}
	pred, err := rf.Other(t).Record(rf.cert.SerialNumber)
	if err != nil || pred.RenewedBy != "" {
		t.Errorf("the predecessor's record: renewed_by %q, %v; want no successor", pred.RenewedBy, err)
	}
}
