package proxy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"
	"time"

	"minica/internal/testca"
)

// TestHierarchyCertificateRequestNamesCAs checks that with a bundle holding
// a root and its intermediates, where the proxy builds the path itself, the
// TLS CertificateRequest still names every CA of the bundle, so that a
// client holding certificates of several CAs picks one of this hierarchy;
// in TLS 1.2 and 1.3 alike.
func TestHierarchyCertificateRequestNamesCAs(t *testing.T) {
	root := testca.NewRoot(t, "Request Root")
	inter1 := root.Intermediate(t, "Request Issuing CA 1")
	inter2 := root.Intermediate(t, "Request Issuing CA 2")
	now := time.Now().Add(-time.Minute)
	crls := append(root.CRL(t, 1, now, time.Hour), inter1.CRL(t, 1, now, time.Hour)...)
	crls = append(crls, inter2.CRL(t, 1, now, time.Hour)...)
	e := newEnv(t, func(c *Config) {
		c.LoadCA = func() ([]*x509.Certificate, error) {
			return []*x509.Certificate{root.Cert, inter1.Cert, inter2.Cert}, nil
		}
		c.CRL = crlFunc(func() ([]byte, error) { return crls, nil })
	})
	alice, aliceKey := inter1.Client(t, "alice")
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(v), func(t *testing.T) {
			var got [][]byte
			cfg := e.tlsConfig(nil, nil)
			cfg.MinVersion, cfg.MaxVersion = v, v
			cfg.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
				got = cri.AcceptableCAs
				return &tls.Certificate{Certificate: [][]byte{alice.Raw}, PrivateKey: aliceKey, Leaf: alice}, nil
			}
			tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(e.url("/"))
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d; want 200", resp.StatusCode)
			}
			for _, ca := range []*testca.CA{root, inter1, inter2} {
				found := false
				for _, name := range got {
					found = found || bytes.Equal(name, ca.Cert.RawSubject)
				}
				if !found {
					t.Errorf("CertificateRequest names %d CAs, not %q", len(got), ca.Cert.Subject)
				}
			}
			if len(got) != 3 {
				t.Errorf("CertificateRequest names %d CAs; want the 3 of the bundle", len(got))
			}
		})
	}
}
