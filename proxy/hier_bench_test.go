package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"minica/internal/testca"
	"minica/revoke"
)

// BenchmarkVerifyConnHierarchy measures the chain work of one handshake:
// for a single CA, Go's TLS verifier (as the handshake runs it, leaf to
// CA) and then verifyConn's judge; for a bundle with an intermediate, where
// the TLS stack verifies nothing (see clientConfig), verifyConn building
// the path up to the root and judging it over both levels' CRLs.
func BenchmarkVerifyConnHierarchy(b *testing.B) {
	now := time.Now()
	root := testca.NewRoot(b, "Bench Root")
	inter := root.Intermediate(b, "Bench Issuing CA")
	parse := func(ca *testca.CA) revoke.IssuedCRL {
		crl, err := revoke.ParseCRL(ca.CRL(b, 1, now, time.Hour), ca.Cert)
		if err != nil {
			b.Fatal(err)
		}
		return revoke.IssuedCRL{CRL: crl, Issuer: ca.Cert}
	}
	for _, tt := range []struct {
		name   string
		issuer *testca.CA
		cas    []*x509.Certificate
		crls   []revoke.IssuedCRL
	}{
		{"single-ca", root, []*x509.Certificate{root.Cert}, []revoke.IssuedCRL{parse(root)}},
		{"intermediate", inter, []*x509.Certificate{root.Cert, inter.Cert}, []revoke.IssuedCRL{parse(root), parse(inter)}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			leaf, _ := tt.issuer.Client(b, "alice")
			pool := x509.NewCertPool()
			for _, c := range tt.cas {
				pool.AddCert(c)
			}
			tr := &trust{}
			tr.setCAs(tt.cas, pool)
			tr.setCRLs(loadedCRL{crls: tt.crls})
			cs := tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf},
				VerifiedChains: [][]*x509.Certificate{{leaf, tt.issuer.Cert}}}
			opts := x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
			for b.Loop() {
				if !tr.layered {
					if _, err := leaf.Verify(opts); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := verifyConn(cs, tr, 0, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
