package revoke_test

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"strings"
	"testing"
	"time"

	"minica/internal/testca"
	"minica/revoke"
)

// TestVerifyPath checks leaves of root -> intermediate the way `minica
// verify` does on an intermediate: each certificate signed by the next and
// valid, crypto/x509's path checks (name constraints), and the CRLs of both
// levels through JudgePath.
func TestVerifyPath(t *testing.T) {
	now := time.Now()
	root := testca.NewRoot(t, "Root")
	inter := root.Intermediate(t, "Issuing")
	sibling := root.Intermediate(t, "Sibling")
	constrained := constrainedIntermediate(t, root, "Constrained", "example.com")
	leaf, _ := inter.Client(t, "simon")
	revokedLeaf, _ := inter.Client(t, "mallory")
	siblingLeaf, _ := sibling.Client(t, "sam")
	inside, _ := constrained.Leaf(t, &x509.Certificate{Subject: pkix.Name{CommonName: "www"}, DNSNames: []string{"www.example.com"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	outside, _ := constrained.Leaf(t, &x509.Certificate{Subject: pkix.Name{CommonName: "evil"}, DNSNames: []string{"www.evil.test"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})

	parse := func(pemCRL []byte, issuer *testca.CA) *revoke.CRL {
		t.Helper()
		crl, err := revoke.ParseCRL(pemCRL, issuer.Cert)
		if err != nil {
			t.Fatal(err)
		}
		return crl
	}
	rootCRL := parse(root.CRL(t, 1, now, 24*time.Hour), root)
	rootRevokes := parse(root.CRL(t, 2, now, 24*time.Hour, inter.Cert), root)
	rootExpired := parse(root.CRL(t, 3, now.Add(-48*time.Hour), 24*time.Hour), root)
	interCRL := parse(inter.CRL(t, 1, now, 24*time.Hour, revokedLeaf), inter)
	constrainedCRL := parse(constrained.CRL(t, 1, now, 24*time.Hour), constrained)

	tests := []struct {
		name       string
		cert       *x509.Certificate
		chain      []*x509.Certificate
		crls       []*revoke.CRL
		purpose    x509.ExtKeyUsage
		wantReason revoke.VerifyReason
		wantDetail string
	}{
		{name: "valid", cert: leaf, crls: []*revoke.CRL{interCRL, rootCRL}},
		{name: "leaf revoked", cert: revokedLeaf, crls: []*revoke.CRL{interCRL, rootCRL}, wantReason: revoke.ReasonRevoked, wantDetail: "serial"},
		{name: "intermediate revoked", cert: leaf, crls: []*revoke.CRL{interCRL, rootRevokes}, wantReason: revoke.ReasonRevoked,
			wantDetail: `CA "CN=Issuing" on the path`},
		{name: "root CRL missing", cert: leaf, crls: []*revoke.CRL{interCRL, nil}, wantReason: revoke.ReasonCRLMissing,
			wantDetail: `no CRL of "CN=Root", the issuer of CA "CN=Issuing" on the path`},
		{name: "root CRL expired", cert: leaf, crls: []*revoke.CRL{interCRL, rootExpired}, wantReason: revoke.ReasonCRLExpired,
			wantDetail: `(the CRL of "CN=Root", which must vouch for CA "CN=Issuing" on the path)`},
		{name: "intermediate CRL missing", cert: leaf, crls: []*revoke.CRL{nil, rootCRL}, wantReason: revoke.ReasonNoCRLForIssuer,
			wantDetail: `issued by "CN=Issuing", whose CRL is not the one in use`},
		{name: "leaf of a sibling", cert: siblingLeaf, crls: []*revoke.CRL{interCRL, rootCRL}, wantReason: revoke.ReasonUnknownCA,
			wantDetail: `issued by "CN=Sibling", not by "CN=Issuing"`},
		{name: "within the constraints", cert: inside, chain: []*x509.Certificate{constrained.Cert, root.Cert},
			crls: []*revoke.CRL{constrainedCRL, rootCRL}, purpose: x509.ExtKeyUsageServerAuth},
		{name: "outside the constraints", cert: outside, chain: []*x509.Certificate{constrained.Cert, root.Cert},
			crls: []*revoke.CRL{constrainedCRL, rootCRL}, purpose: x509.ExtKeyUsageServerAuth, wantReason: revoke.ReasonBadChain,
			wantDetail: `"www.evil.test" is not permitted`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.chain == nil {
				tt.chain = []*x509.Certificate{inter.Cert, root.Cert}
			}
			if tt.purpose == 0 {
				tt.purpose = x509.ExtKeyUsageClientAuth
			}
			err := revoke.VerifyPath(tt.cert, revoke.PathOptions{Chain: tt.chain, CRLs: tt.crls, Purpose: tt.purpose, At: now})
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("VerifyPath() = %v; want nil", err)
				}
				return
			}
			ve, ok := err.(*revoke.VerifyError)
			if !ok || ve.Reason != tt.wantReason || !strings.Contains(ve.Detail, tt.wantDetail) {
				t.Fatalf("VerifyPath() = %v; want reason %s with detail containing %q", err, tt.wantReason, tt.wantDetail)
			}
		})
	}
	if err := revoke.VerifyPath(leaf, revoke.PathOptions{Purpose: x509.ExtKeyUsageClientAuth, At: now}); err == nil {
		t.Error("VerifyPath() without a chain: no error")
	}
}

// constrainedIntermediate is an intermediate of root permitted the DNS
// domain dns only.
func constrainedIntermediate(t *testing.T, root *testca.CA, cn, dns string) *testca.CA {
	t.Helper()
	key := testca.NewKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: testca.RandomSerial(t), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
		PermittedDNSDomainsCritical: true, PermittedDNSDomains: []string{dns},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, root.Cert, key.Public(), root.Key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testca.CA{Cert: cert, Key: key}
}
