package proxy

import (
	"crypto"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"minica/internal/testca"
)

// TestHierarchyRevocation runs the proxy with the bundle of a root and two
// intermediates and the CRLs of all three in one file: leaves of both
// intermediates pass (the overlap of a rotation), a leaf revoked at its
// intermediate is refused, and once the root's CRL revokes an intermediate
// every leaf of that one is refused while the other's still pass. A CRL
// file without the root's CRL refuses leaves too: no CA of the path goes
// unchecked.
func TestHierarchyRevocation(t *testing.T) {
	root := testca.NewRoot(t, "Hier Root")
	inter1 := root.Intermediate(t, "Hier Issuing CA 1")
	inter2 := root.Intermediate(t, "Hier Issuing CA 2")
	var crls atomic.Pointer[[]byte]
	var n int64
	now := time.Now().Add(-time.Minute)
	alice, aliceKey := inter1.Client(t, "alice")
	bob, bobKey := inter1.Client(t, "bob")
	sam, samKey := inter2.Client(t, "sam")
	eve, eveKey := testca.NewRoot(t, "Hier Root").Intermediate(t, "Hier Issuing CA 1").Client(t, "eve")
	setCRLs := func(parts ...[]byte) {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		crls.Store(&b)
	}
	next := func(ca *testca.CA, revoked ...*x509.Certificate) []byte {
		n++
		return ca.CRL(t, n, now, time.Hour, revoked...)
	}
	setCRLs(next(root), next(inter1, bob), next(inter2))
	e := newEnv(t, func(c *Config) {
		c.LoadCA = func() ([]*x509.Certificate, error) {
			return []*x509.Certificate{root.Cert, inter1.Cert, inter2.Cert}, nil
		}
		c.CRL = crlFunc(func() ([]byte, error) { return *crls.Load(), nil })
	})
	type client struct {
		name  string
		cert  *x509.Certificate
		key   crypto.Signer
		chain []*x509.Certificate // sent after the leaf
	}
	clients := []client{
		{"alice", alice, aliceKey, nil},
		{"alice-with-chain", alice, aliceKey, []*x509.Certificate{inter1.Cert}},
		{"bob", bob, bobKey, nil},
		{"sam", sam, samKey, nil},
		{"eve", eve, eveKey, nil}, // same names, other keys
	}
	handshake := func(c client) error {
		cfg := e.tlsConfig(c.cert, c.key)
		raw := [][]byte{c.cert.Raw}
		for _, x := range c.chain {
			raw = append(raw, x.Raw)
		}
		cfg.Certificates[0].Certificate = raw
		tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(e.url("/"))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	steps := []struct {
		name   string
		crls   func()
		passes map[string]bool
	}{
		{"both intermediates in service", func() {}, map[string]bool{"alice": true, "alice-with-chain": true, "sam": true}},
		{"intermediate 1 revoked at the root", func() { setCRLs(next(root, inter1.Cert), next(inter1, bob), next(inter2)) },
			map[string]bool{"sam": true}},
		{"root CRL missing", func() { setCRLs(next(inter1, bob), next(inter2)) }, map[string]bool{}},
	}
	open := e.client(alice, aliceKey, false)
	if code, _ := e.get(open, "/", nil); code != http.StatusOK {
		t.Fatalf("alice on an open connection: status %d; want 200", code)
	}
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.crls()
			if i > 0 {
				if err := e.p.Reload(); err != nil {
					t.Fatalf("Reload() = %v", err)
				}
			}
			for _, c := range clients {
				err := handshake(c)
				if st.passes[c.name] != (err == nil) {
					t.Errorf("%s: handshake error = %v; want passing %v\n%s", c.name, err, st.passes[c.name], e.log.String())
				}
			}
			// A reload closes the connections of clients it refuses; the
			// client's next request then needs a new handshake.
			resp, err := open.Get(e.url("/"))
			if err == nil {
				resp.Body.Close()
			}
			if ok := err == nil && resp.StatusCode == http.StatusOK; ok != st.passes["alice"] {
				t.Errorf("alice's open client: %v; want passing %v", err, st.passes["alice"])
			}
		})
	}
	e.waitLog("handshake-refused", "reason=revoked", "cn=bob")
	e.waitLog("handshake-refused", "reason=revoked", "cn=alice")
	e.waitLog("handshake-refused", "reason=crl-missing", "cn=sam")
	e.waitLog("handshake-refused", "reason=unknown-ca", "cn=eve")
}

// TestReloadRefusesBadCRLFiles keeps the CRLs in use when a new file holds
// two CRLs of one CA, a certificate, or a CRL no CA of the bundle signed.
func TestReloadRefusesBadCRLFiles(t *testing.T) {
	root := testca.NewRoot(t, "Reload Root")
	inter := root.Intermediate(t, "Reload Issuing CA")
	stranger := testca.New(t, "Stranger")
	now := time.Now().Add(-time.Minute)
	var crls atomic.Pointer[[]byte]
	good := append(root.CRL(t, 1, now, time.Hour), inter.CRL(t, 1, now, time.Hour)...)
	crls.Store(&good)
	e := newEnv(t, func(c *Config) {
		c.LoadCA = func() ([]*x509.Certificate, error) { return []*x509.Certificate{root.Cert, inter.Cert}, nil }
		c.CRL = crlFunc(func() ([]byte, error) { return *crls.Load(), nil })
	})
	alice, aliceKey := inter.Client(t, "alice")
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"two CRLs of one CA", append(root.CRL(t, 2, now, time.Hour), root.CRL(t, 3, now, time.Hour)...),
			`loading CRL: revoke: two CRLs of one CA ("CN=Reload Root")`},
		{"a certificate", append(root.CRL(t, 2, now, time.Hour), root.PEM()...), `PEM block 2 is "CERTIFICATE", not "X509 CRL"`},
		{"a stranger's CRL", append(root.CRL(t, 2, now, time.Hour), stranger.CRL(t, 1, now, time.Hour)...), "no CA of the bundle accepts the CRL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crls.Store(&tt.data)
			if err := e.p.Reload(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Reload() = %v; want containing %q", err, tt.want)
			}
			if code, _ := e.get(e.client(alice, aliceKey, false), "/", nil); code != http.StatusOK {
				t.Errorf("status %d; want 200 with the CRLs in use kept", code)
			}
		})
	}
}
