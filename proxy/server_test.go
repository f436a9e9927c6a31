package proxy

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"minica/identity"
	"minica/internal/testca"
)

// alertNames are the TLS alerts by the text a Go client reports for them.
var alertNames = map[string]string{
	"tls: certificate required":          "certificate_required",
	"tls: unknown certificate authority": "unknown_ca",
	"tls: expired certificate":           "certificate_expired",
	"tls: bad certificate":               "bad_certificate",
	"tls: revoked certificate":           "certificate_revoked",
}

// readAlertTable returns the alert column of docs/proxy.md's table of
// refused handshakes by log reason (the TLS 1.3 row where there are two).
func readAlertTable(t *testing.T) map[string]string {
	data, err := os.ReadFile("../docs/proxy.md")
	if err != nil {
		t.Fatal(err)
	}
	table := map[string]string{}
	for line := range strings.Lines(string(data)) {
		cols := strings.Split(strings.TrimSpace(line), " | ")
		if len(cols) != 3 || !strings.HasPrefix(cols[1], "`") {
			continue
		}
		reason := strings.Trim(cols[1], "`")
		if _, ok := table[reason]; !ok {
			table[reason] = strings.TrimSpace(cols[2])
		}
	}
	return table
}

// TestClientMatrix: each kind of client certificate gets what docs/proxy.md
// says: a refused handshake with the alert its table names, or a status.
func TestClientMatrix(t *testing.T) {
	alertTable := readAlertTable(t)
	e := newEnv(t, func(c *Config) { c.AllowCN = []string{"alice", "revoked", "no-eku", "server"} })
	now := time.Now()
	other := testca.New(t, "Test CA") // same subject, other key
	revoked, revokedKey := e.ca.Client(t, "revoked")
	e.setCRL(e.makeCRL(revoked.SerialNumber))
	if err := e.p.Reload(); err != nil {
		t.Fatalf("Reload() error = %v", err)
	}
	leaf := func(ca *testca.CA, cn string, nb, na time.Time, eku []x509.ExtKeyUsage) func() (*x509.Certificate, crypto.Signer) {
		return func() (*x509.Certificate, crypto.Signer) {
			return ca.Leaf(t, &x509.Certificate{Subject: pkix.Name{CommonName: cn}, NotBefore: nb, NotAfter: na,
				KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: eku})
		}
	}
	clientEKU := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	tests := []struct {
		name   string
		cert   func() (*x509.Certificate, crypto.Signer)
		reason string // "" means 200
		status int    // for refusals after the handshake
		alert  string // the client's error for a refused handshake, TLS 1.3
	}{
		{name: "valid", cert: func() (*x509.Certificate, crypto.Signer) { return e.ca.Client(t, "alice") }},
		{name: "none", cert: func() (*x509.Certificate, crypto.Signer) { return nil, nil }, reason: ReasonNoCertificate, alert: "tls: certificate required"},
		{name: "other CA same subject", cert: func() (*x509.Certificate, crypto.Signer) { return other.Client(t, "alice") }, reason: ReasonUnknownCA, alert: "tls: unknown certificate authority"},
		{name: "expired", cert: leaf(e.ca, "alice", now.Add(-48*time.Hour), now.Add(-24*time.Hour), clientEKU), reason: ReasonExpired, alert: "tls: expired certificate"},
		{name: "not yet valid", cert: leaf(e.ca, "alice", now.Add(time.Hour), now.Add(48*time.Hour), clientEKU), reason: ReasonNotYetValid, alert: "tls: expired certificate"},
		{name: "server-only EKU", cert: func() (*x509.Certificate, crypto.Signer) { return e.ca.Server(t, "server") }, reason: ReasonWrongEKU, alert: "tls: bad certificate"},
		{name: "no EKU", cert: leaf(e.ca, "no-eku", time.Time{}, time.Time{}, nil), reason: ReasonNoEKU, alert: "tls: bad certificate"},
		{name: "revoked", cert: func() (*x509.Certificate, crypto.Signer) { return revoked, revokedKey }, reason: ReasonRevoked, alert: "tls: bad certificate"},
		{name: "not allowed", cert: func() (*x509.Certificate, crypto.Signer) { return e.ca.Client(t, "bob") }, reason: ReasonNotAllowed, status: http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert, key := tt.cert()
			c := e.client(cert, key, false)
			req, _ := http.NewRequest("GET", e.url("/x"), nil)
			resp, err := c.Do(req)
			switch {
			case tt.reason == "":
				if err != nil {
					t.Fatalf("GET: %v", err)
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("status = %d; want 200", resp.StatusCode)
				}
				got := e.lastReq.Load().Header
				if got.Get("X-Ssl-Client-Cn") != "alice" || got.Get("X-Ssl-Client-Serial") != identity.SerialHex(cert.SerialNumber) || got.Get("X-Ssl-Client-Verify") != "SUCCESS" {
					t.Errorf("upstream headers = %v", got)
				}
				e.waitLog("request ", "cn=alice", "status=200", "serial="+identity.SerialHex(cert.SerialNumber))
			case tt.status != 0:
				if err != nil {
					t.Fatalf("GET: %v", err)
				}
				resp.Body.Close()
				if resp.StatusCode != tt.status {
					t.Fatalf("status = %d; want %d", resp.StatusCode, tt.status)
				}
				e.waitLog("request ", "reason="+tt.reason, "cn=bob")
			default:
				if err == nil {
					resp.Body.Close()
					t.Fatalf("GET succeeded with status %d; want a refused handshake", resp.StatusCode)
				}
				if err := e.handshakeError(e.tlsConfig(cert, key)); err == nil || !strings.Contains(err.Error(), "remote error: "+tt.alert) {
					t.Errorf("handshake error = %v; want alert %q", err, tt.alert)
				}
				if doc := alertTable[tt.reason]; !strings.Contains(doc, `("`+tt.alert+`")`) && !strings.Contains(doc, alertNames[tt.alert]+"` |") {
					t.Errorf("docs/proxy.md's alert table says %q for %s; the proxy sent %q", doc, tt.reason, tt.alert)
				}
				want := []string{"handshake-refused ", "reason=" + tt.reason + " "}
				if cert != nil {
					want = append(want, "serial="+identity.SerialHex(cert.SerialNumber))
				}
				e.waitLog(want...)
			}
		})
	}
	// Waited for, not read once: a row's client has its alert when the
	// server sent it, before the server's handshake goroutine counts the
	// refusal, and the row's log check is met by the row's first line.
	for _, want := range [][2]string{
		{`minica_proxy_handshake_failures_total{reason="revoked"}`, "2"},
		{`minica_proxy_handshake_failures_total{reason="unknown-ca"}`, "2"},
		{`minica_proxy_requests_total{code="200"}`, "1"},
		{`minica_proxy_requests_total{code="403"}`, "1"},
		{`minica_proxy_requests_refused_total{reason="not-allowed"}`, "1"},
		{"minica_proxy_crl_number", "2"},
	} {
		e.waitMetric(want[0], want[1])
	}
}

// handshakeError dials the proxy with cfg and reads without writing, so
// that in TLS 1.3, where the client's handshake ends before the server has
// verified its certificate, the alert is read before the connection closes.
// It returns the error of the handshake or of the read.
func (e *env) handshakeError(cfg *tls.Config) error {
	c, err := tls.Dial("tcp", e.addr, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = c.Read(make([]byte, 1))
	return err
}

func TestTLSVersionsAndHTTP2(t *testing.T) {
	e := newEnv(t, nil)
	cert, key := e.ca.Client(t, "alice")
	c := e.client(cert, key, true)
	resp, err := c.Get(e.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 {
		t.Errorf("got %s %d; want HTTP/2 200", resp.Proto, resp.StatusCode)
	}
	cfg := e.tlsConfig(cert, key)
	cfg.MinVersion, cfg.MaxVersion = 0x0301, 0x0302 // TLS 1.0 and 1.1
	tr := &http.Transport{TLSClientConfig: cfg}
	defer tr.CloseIdleConnections()
	if _, err := (&http.Client{Transport: tr}).Get(e.url("/")); err == nil {
		t.Error("TLS 1.1 handshake succeeded; want refused")
	}
}

func TestTLS12Alerts(t *testing.T) {
	e := newEnv(t, nil)
	other := testca.New(t, "Test CA")
	stranger, strangerKey := other.Client(t, "alice")
	revoked, revokedKey := e.ca.Client(t, "revoked")
	e.setCRL(e.makeCRL(revoked.SerialNumber))
	if err := e.p.Reload(); err != nil {
		t.Fatalf("Reload() error = %v", err)
	}
	tests := []struct {
		name   string
		cert   *x509.Certificate
		key    crypto.Signer
		reason string
		alert  string
	}{
		{name: "none", reason: ReasonNoCertificate, alert: "tls: handshake failure"},
		{name: "other CA", cert: stranger, key: strangerKey, reason: ReasonUnknownCA, alert: "tls: unknown certificate authority"},
		{name: "revoked", cert: revoked, key: revokedKey, reason: ReasonRevoked, alert: "tls: bad certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := e.tlsConfig(tt.cert, tt.key)
			cfg.MaxVersion = tls.VersionTLS12
			if err := e.handshakeError(cfg); err == nil || !strings.Contains(err.Error(), "remote error: "+tt.alert) {
				t.Errorf("handshake error = %v; want alert %q", err, tt.alert)
			}
			e.waitLog("handshake-refused ", "reason="+tt.reason+" ")
		})
	}
}

// A session of a client whose CA left the bundle does not resume: it gets
// a full handshake, refused with unknown_ca. (The new CA has the old one's
// subject: a Go client sends no certificate whose issuer is not among the
// CA names of the certificate request.)
func TestResumedSessionAfterCARotation(t *testing.T) {
	e := newEnv(t, nil)
	cert, key := e.ca.Client(t, "alice")
	_, cfg := e.resumingClient(t, cert, key)
	next := testca.New(t, "Test CA")
	only := []*x509.Certificate{next.Cert}
	e.cas.Store(&only)
	e.setCRL(e.makeCRLWith(bigInt(1), e.now().Add(-time.Minute), e.now().Add(time.Hour), next))
	if err := e.p.Reload(); err != nil {
		t.Fatalf("Reload() error = %v", err)
	}
	if err := e.handshakeError(cfg); err == nil || !strings.Contains(err.Error(), "remote error: tls: unknown certificate authority") {
		t.Errorf("resumed session: handshake error = %v; want an unknown CA alert", err)
	}
	e.waitLog("handshake-refused ", "reason=unknown-ca ", "serial="+identity.SerialHex(cert.SerialNumber))
}
