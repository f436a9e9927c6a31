//go:build interop

package browsertest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"minica/crlsource"
	"minica/formats"
	mproxy "minica/proxy"
)

// TestChromiumRefusalPages loads a page in headless Chromium through the
// proxy in --refusal page mode with a revoked and with an expired client
// certificate, each presented by the browser (told by the managed policy,
// as in TestChromiumThroughProxy): each gets its refusal page, naming the
// certificate, the reason and the way back (the --help-url link), and the
// upstream gets nothing. Screenshots go to the artefacts, and to
// $MINICA_REFUSAL_DOCS when set (docs/proxy/ holds them).
//
// Chromium offers no certificate that has expired by its own clock (the
// person then gets the no-certificate page, checked here too, with a
// certificate that expired two days ago): the expired
// page comes when the certificate expires while the browser still presents
// it (an open connection, a resumed session, a clock behind). The test
// makes that moment with the proxy's clock, the library's Config.Now, two
// hours ahead of the browser's, for a certificate valid for one hour.
func TestChromiumRefusalPages(t *testing.T) {
	bed := newBed(t, "minica refusal test CA")
	m, work, shots, caCN, caCert, server := bed.m, bed.work, bed.shots, bed.caCN, bed.caCert, bed.server
	_, _, good := m.issueClient(t, work, "gina", "gina@example.com", "modern")
	ritaP12, ritaPW, rita := m.issueClient(t, work, "rita", "rita@example.com", "modern")
	ellaP12, ellaPW := filepath.Join(work, "ella.p12"), filepath.Join(work, "ella.pw")
	m.run(t, work, "issue", "client", "ella", "--email", "ella@example.com", "--validity", "1h",
		"--p12", "--p12-out", ellaP12, "--p12-password-out", ellaPW)

	oldP12, oldPW := expiredClient(t, m.dir, work, "olga")

	const help = "https://pki.example.com/renew"
	app, upstreamSrv := startUpstream(t)
	px := m.startProxy(t, "localhost", upstreamSrv.URL, good, "--refusal", "page", "--help-url", help)
	m.run(t, work, "revoke", "rita", "--reason", "keyCompromise")
	px.reloadUntilRefused(t, m.dir, rita)
	ahead := startProxyAt(t, m.dir, server, upstreamSrv.URL, help, 2*time.Hour)

	tests := []struct {
		name, cn, p12, pw, origin string
		status                    int
		reason                    string
		want                      []string
		log                       *lockedBuffer
	}{
		{"revoked", "rita", ritaP12, ritaPW, fmt.Sprintf("https://127.0.0.1:%d", px.port), 495, "revoked",
			[]string{"Your certificate has been revoked", "(reason: keyCompromise)", "Get a new certificate"}, px.log},
		{"expired", "ella", ellaP12, ellaPW, ahead.origin, 495, "expired",
			[]string{"Your certificate has expired", "expired on ", "Renew your certificate"}, ahead.log},
		// Chromium offers no certificate expired by its own clock: with
		// only such a one, the person gets the no-certificate page.
		{"no-certificate", "", oldP12, oldPW, fmt.Sprintf("https://127.0.0.1:%d", px.port), 496, "no-certificate",
			[]string{"No client certificate", "presented none", "if yours has, renew it", "Get a client certificate"}, px.log},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			installPolicy(t, caCN, tt.origin)
			cn := tt.cn
			if cn == "" {
				cn = "olga"
			}
			// The requests that waited for the reload (reloadUntilRefused)
			// may have reached the upstream; the browser's must not.
			before := app.count(tt.cn)
			b := newBrowser(t, newNSSHome(t, caCert, tt.p12, tt.pw, cn))
			b.do(t, "opening the site", chromedp.Navigate(tt.origin+"/private"), chromedp.WaitVisible(chromedp.ID("title")))
			page := b.text(t)
			for _, want := range append(tt.want, "Reason code "+tt.reason, fmt.Sprint(tt.status)) {
				if !strings.Contains(page, want) {
					t.Errorf("the %s page lacks %q:\n%s", tt.name, want, page)
				}
			}
			if tt.cn != "" && (!strings.Contains(page, tt.cn) || !strings.Contains(page, "Valid until")) {
				t.Errorf("the %s page does not name the certificate of %s:\n%s", tt.name, tt.cn, page)
			}
			if href := b.attr(t, "help", "href"); href != help {
				t.Errorf("the help link is %q; want %q", href, help)
			}
			if n := app.count(tt.cn) - before; n != 0 {
				t.Errorf("the upstream got %d requests from %q's browser; want none", n, tt.cn)
			}
			parts := []string{"request ", "uri=/private", fmt.Sprintf("status=%d", tt.status), "reason=" + tt.reason}
			if tt.cn != "" {
				parts = append(parts, "cn="+tt.cn+" ")
			}
			waitLogLine(t, tt.log, parts...)
			b.shot(t, shots, "refusal-"+tt.name)
			if docs := os.Getenv("MINICA_REFUSAL_DOCS"); docs != "" {
				data, err := os.ReadFile(filepath.Join(shots, "refusal-"+tt.name+".png"))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(docs, "refusal-"+tt.name+".png"), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	for _, l := range []*lockedBuffer{px.log, ahead.log} {
		if refusedForCert.MatchString(l.String()) {
			t.Errorf("page mode refused a handshake for a certificate:\n%s", l)
		}
	}
}

// expiredClient signs, with the key of the CA in caDir, a client
// certificate for cn that expired two days ago (minica issues none such),
// and writes it with its key as a modern .p12 in dir; it returns the
// .p12's path and its password file.
func expiredClient(t *testing.T, caDir, dir, cn string) (p12, pwFile string) {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(caDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	cas, err := formats.ParseCertificates(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(caDir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := formats.ParsePrivateKeyPEM(keyPEM, nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: serial.Add(serial, big.NewInt(1)),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-30 * 24 * time.Hour),
		NotAfter:     now.Add(-2 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, cas[0], key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	const password = "expired bundle password"
	data, err := formats.EncodeP12(formats.P12Modern, key, leaf, cas[:1], password)
	if err != nil {
		t.Fatal(err)
	}
	p12, pwFile = filepath.Join(dir, cn+".p12"), filepath.Join(dir, cn+".pw")
	if err := os.WriteFile(p12, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pwFile, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	return p12, pwFile
}

// refusedForCert matches a handshake refused for a certificate's reason
// (Chromium's unused preconnections, closed before their first byte, are
// no refusals: they are counted, not logged).
var refusedForCert = regexp.MustCompile(`handshake-refused \S+ reason=(no-certificate|expired|revoked|unknown-ca)`)

// inProcessProxy is a proxy of package proxy run by the test itself, for
// a clock of its own.
type inProcessProxy struct {
	origin string
	log    *lockedBuffer
}

// startProxyAt runs, in the test, the proxy that `minica proxy
// --server-cert --refusal page --help-url help` runs for the CA in caDir,
// with its clock shift ahead of the real one, on a free port of 127.0.0.1
// until the test ends.
func startProxyAt(t *testing.T, caDir string, server issued, upstreamURL, help string, shift time.Duration) *inProcessProxy {
	t.Helper()
	log := &lockedBuffer{}
	p, err := mproxy.New(mproxy.Config{
		Upstream: upstreamURL,
		LoadCA: func() ([]*x509.Certificate, error) {
			data, err := os.ReadFile(filepath.Join(caDir, "ca.crt"))
			if err != nil {
				return nil, err
			}
			return formats.ParseCertificates(data)
		},
		CRL:      crlsource.Files{filepath.Join(caDir, "crl.der")},
		LoadCert: func() (tls.Certificate, error) { return tls.LoadX509KeyPair(server.Cert, server.Key) },
		Refusal:  mproxy.RefusalPage,
		HelpURL:  help,
		Log:      log,
		Now:      func() time.Time { return time.Now().Add(shift) },
	})
	if err != nil {
		t.Fatalf("starting the proxy %s ahead: %v", shift, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the proxy %s ahead: %v", shift, err)
		}
	})
	return &inProcessProxy{origin: "https://" + ln.Addr().String(), log: log}
}

// waitLogLine waits (bounded) for a line of log holding every part.
func waitLogLine(t *testing.T, log *lockedBuffer, parts ...string) {
	t.Helper()
	err := waitFor(10*time.Second, func() error {
		for _, line := range strings.Split(log.String(), "\n") {
			ok := true
			for _, part := range parts {
				ok = ok && strings.Contains(line, part)
			}
			if ok {
				return nil
			}
		}
		return errors.New("no such line")
	})
	if err != nil {
		t.Errorf("the proxy logged no line with %q:\n%s", parts, log)
	}
}
