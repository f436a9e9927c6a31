package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"minica/crlsource"
	"minica/proxy"
)

// TestProxyAndVerifyAgree feeds the same certificate, CA, CRL and time to
// the proxy's real TLS handshake (the library on 127.0.0.1, wired like
// `minica proxy`) and to `minica verify --json`, and wants the same verdict
// and reason from both: they share one judge (revoke.Judge).
func TestProxyAndVerifyAgree(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := t0.Add(36 * time.Hour) // every CRL below is fresh then
	wd := t.TempDir()
	dir := filepath.Join(wd, "ca")
	otherDir := filepath.Join(wd, "other")
	step := func(dir string, now time.Time, args ...string) {
		t.Helper()
		if out, errOut, code := minicaAt(t, wd, dir, now, args...); code != 0 {
			t.Fatalf("minica %v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	step(dir, t0, "init", "--cn", "Root", "--no-password")
	step(dir, t0, "issue", "client", "alice")
	step(dir, t0, "issue", "client", "bob")
	step(dir, t0, "issue", "client", "old", "--validity", "1d")
	step(dir, t0.Add(48*time.Hour), "issue", "client", "future")
	step(dir, t0, "issue", "server", "web.example.com")
	step(dir, t0, "revoke", "bob", "--reason", "keyCompromise")
	step(otherDir, t0, "init", "--cn", "Other", "--no-password")
	step(otherDir, t0, "issue", "client", "mallory")

	caCert, caKey := readCAFiles(t, dir)
	noEKU := signLeaf(t, wd, "noeku", caCert, caKey, func(c *x509.Certificate) {})
	subCA := signLeaf(t, wd, "subca", caCert, caKey, func(c *x509.Certificate) {
		c.BasicConstraintsValid, c.IsCA = true, true
		c.KeyUsage |= x509.KeyUsageCertSign
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
	crlOfOther := filepath.Join(otherDir, "crl.der")

	tests := []struct {
		name  string
		cert  string // the client's certificate and key, without extension
		at    time.Time
		grace string
		crl   string // the CRL in place of the CA's, if set
		want  string // "" for valid
	}{
		{name: "valid", cert: certBase(t, dir, "alice"), at: at},
		{name: "revoked", cert: certBase(t, dir, "bob"), at: at, want: "revoked"},
		{name: "expired", cert: certBase(t, dir, "old"), at: at, want: "expired"},
		{name: "not yet valid", cert: certBase(t, dir, "future"), at: at, want: "not-yet-valid"},
		{name: "no EKU", cert: noEKU, at: at, want: "no-eku"},
		{name: "serverAuth only", cert: certBase(t, dir, "web.example.com"), at: at, want: "wrong-eku"},
		{name: "CA:TRUE", cert: subCA, at: at, want: "ca-certificate"},
		{name: "other CA", cert: certBase(t, otherDir, "mallory"), at: at, want: "unknown-ca"},
		{name: "CRL expired", cert: certBase(t, dir, "alice"), at: t0.Add(8 * 24 * time.Hour), want: "crl-expired"},
		{name: "CRL expired beyond grace", cert: certBase(t, dir, "alice"), at: t0.Add(8 * 24 * time.Hour), grace: "12h", want: "crl-expired"},
		{name: "CRL expired within grace", cert: certBase(t, dir, "alice"), at: t0.Add(8 * 24 * time.Hour), grace: "48h"},
		{name: "revoked, CRL within grace", cert: certBase(t, dir, "bob"), at: t0.Add(8 * 24 * time.Hour), grace: "48h", want: "revoked"},
		// Two failures: the judge's order (the CRL first) decides for both.
		{name: "CA:TRUE while the CRL is expired", cert: subCA, at: t0.Add(8 * 24 * time.Hour), want: "crl-expired"},
		{name: "no EKU while the CRL is expired", cert: noEKU, at: t0.Add(8 * 24 * time.Hour), want: "crl-expired"},
		// Last: it replaces the CA's CRL.
		{name: "CRL of another CA", cert: certBase(t, dir, "alice"), at: at, crl: crlOfOther, want: "crl-missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.crl != "" {
				data, err := os.ReadFile(tt.crl)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "crl.der"), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			grace := tt.grace
			if grace == "" {
				grace = "0"
			}
			cli := verifyReason(t, wd, dir, tt.at, tt.cert+".crt", grace)
			px := proxyReason(t, dir, tt.at, tt.cert, grace)
			if cli != tt.want || px != tt.want {
				t.Errorf("minica verify says %q, the proxy %q; want %q from both", cli, px, tt.want)
			}
		})
	}
}

// minicaAt runs the test binary as minica with MINICA_DIR=dir at now,
// and returns what it printed on stdout and on stderr.
func minicaAt(t *testing.T, wd, dir string, now time.Time, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("minica", args...)
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), "MINICA_DIR="+dir, "MINICA_TEST_NOW="+now.Format(time.RFC3339))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), errOut.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running minica %v: %v", args, err)
	}
	return out.String(), errOut.String(), 0
}

// verifyReason runs `minica verify --json` on file as a client certificate
// and returns its reason, "" when valid.
func verifyReason(t *testing.T, wd, dir string, at time.Time, file, grace string) string {
	t.Helper()
	out, errOut, code := minicaAt(t, wd, dir, at, "verify", file, "--purpose", "client", "--crl-grace", grace, "--json")
	var v struct {
		Valid  bool   `json:"valid"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Valid != (code == 0) || v.Valid != (v.Reason == "") {
		t.Fatalf("minica verify: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	return v.Reason
}

// proxyReason starts the proxy on the CA of dir (CA bundle ca.crt, CRL
// crl.der, server certificate web.example.com) with its clock at at,
// connects with the client certificate base.crt and key base.key, and
// returns the reason the proxy logs for refusing it, "" if the request
// reaches the upstream. A proxy that cannot start because no CA of the
// bundle accepts the CRL refuses every client: its reason is crl-missing,
// as the judge names the absence of a usable CRL.
func proxyReason(t *testing.T, dir string, at time.Time, base, grace string) string {
	t.Helper()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") }))
	defer upstream.Close()
	var clock atomic.Pointer[time.Time]
	start := at
	if next := crlNextUpdate(t, dir); start.After(next) {
		start = next // the proxy does not start on an expired CRL; it expires while it runs
	}
	clock.Store(&start)
	var log syncBuffer
	cfg := proxy.Config{
		Upstream: upstream.URL,
		LoadCA:   func() ([]*x509.Certificate, error) { return readCertsFile(filepath.Join(dir, "ca.crt")) },
		CRL:      crlsource.Files{filepath.Join(dir, "crl.der")},
		LoadCert: func() (tls.Certificate, error) {
			b := certBase(t, dir, "web.example.com")
			return tls.LoadX509KeyPair(b+".crt", b+".key")
		},
		Log: &log,
		Now: func() time.Time { return *clock.Load() },
	}
	if grace != "0" {
		d, err := time.ParseDuration(grace)
		if err != nil {
			t.Fatal(err)
		}
		cfg.CRLGrace = d
	}
	p, err := proxy.New(cfg)
	if errors.Is(err, proxy.ErrCRLUnverified) {
		return "crl-missing"
	}
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	clock.Store(&at)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	defer func() {
		cancel()
		<-done
	}()

	client, err := tls.LoadX509KeyPair(base+".crt", base+".key")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	cas, err := readCertsFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cas {
		roots.AddCert(c)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		// Sent whatever CAs the proxy names, as a client of another CA would.
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &client, nil },
		RootCAs:              roots, ServerName: "web.example.com",
		Time: func() time.Time { return at },
	}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://" + ln.Addr().String() + "/")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return ""
		}
		t.Fatalf("proxy answered %s", resp.Status)
	}
	// The proxy logs the refusal once its side of the handshake is over.
	re := regexp.MustCompile(`handshake-refused .*reason=(\S+)`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(log.String()); m != nil {
			return m[1]
		}
	}
	t.Fatalf("request error %v, and no refusal logged:\n%s", err, log.String())
	return ""
}

// certBase returns the path, without extension, of name's newest
// certificate in the CA directory dir.
func certBase(t *testing.T, dir, name string) string {
	t.Helper()
	certs := serialCerts(filepath.Join(dir, "certs", name, "*.crt"))
	if len(certs) == 0 {
		t.Fatalf("no certificate named %s in %s", name, dir)
	}
	newest := certs[0]
	for _, c := range certs[1:] {
		if modTime(c) > modTime(newest) {
			newest = c
		}
	}
	return newest[:len(newest)-len(".crt")]
}

func crlNextUpdate(t *testing.T, dir string) time.Time {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "crl.der"))
	if err != nil {
		t.Fatal(err)
	}
	crl, err := x509.ParseRevocationList(data)
	if err != nil {
		t.Fatal(err)
	}
	return crl.NextUpdate
}

func readCAFiles(t *testing.T, dir string) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	certs, err := readCertsFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("ca.key: no PEM block")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return certs[0], key.(crypto.Signer)
}

// signLeaf writes wd/name.crt and wd/name.key: a certificate of the CA,
// valid from 2030-01-01 for a year, without EKU unless edit adds one.
func signLeaf(t *testing.T, wd, name string, issuer *x509.Certificate, key crypto.Signer, edit func(*x509.Certificate)) string {
	t.Helper()
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: new(big.Int).SetBytes([]byte(name)),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:     time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	edit(tmpl)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, &leafKey.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(leafKey)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(wd, name)
	writeBytes(t, wd, name+".crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	writeBytes(t, wd, name+".key", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	return base
}
