package revoke_test

import (
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	"minica/internal/testca"
	"minica/revoke"
)

// TestJudgePath judges leaves of a root -> intermediate -> leaf hierarchy
// with the CRLs of both levels: a revoked intermediate refuses every leaf
// under it, a leaf revoked at the intermediate is refused, and a missing or
// expired CRL of either level refuses as well.
func TestJudgePath(t *testing.T) {
	now := time.Now()
	root := testca.NewRoot(t, "Path Root")
	inter := root.Intermediate(t, "Path Issuing CA")
	other := root.Intermediate(t, "Path Issuing CA 2")
	leaf, _ := inter.Client(t, "simon")
	revokedLeaf, _ := inter.Client(t, "mallory")
	otherLeaf, _ := other.Client(t, "sam")

	parse := func(t *testing.T, pemCRL []byte, issuer *testca.CA) revoke.IssuedCRL {
		t.Helper()
		crl, err := revoke.ParseCRL(pemCRL, issuer.Cert)
		if err != nil {
			t.Fatal(err)
		}
		return revoke.IssuedCRL{CRL: crl, Issuer: issuer.Cert}
	}
	rootCRL := parse(t, root.CRL(t, 1, now, 24*time.Hour), root)
	rootRevokesInter := parse(t, root.CRL(t, 2, now, 24*time.Hour, inter.Cert), root)
	rootExpired := parse(t, root.CRL(t, 3, now.Add(-48*time.Hour), 24*time.Hour), root)
	interCRL := parse(t, inter.CRL(t, 1, now, 24*time.Hour, revokedLeaf), inter)
	otherCRL := parse(t, other.CRL(t, 1, now, 24*time.Hour), other)

	tests := []struct {
		name       string
		leaf       *x509.Certificate
		issuer     *testca.CA
		crls       []revoke.IssuedCRL
		skip       bool
		wantReason revoke.VerifyReason
		wantDetail string
	}{
		{name: "valid", leaf: leaf, issuer: inter, crls: []revoke.IssuedCRL{rootCRL, interCRL}},
		{name: "leaf revoked at the intermediate", leaf: revokedLeaf, issuer: inter, crls: []revoke.IssuedCRL{rootCRL, interCRL},
			wantReason: revoke.ReasonRevoked, wantDetail: "revoked at"},
		{name: "intermediate revoked at the root", leaf: leaf, issuer: inter, crls: []revoke.IssuedCRL{rootRevokesInter, interCRL},
			wantReason: revoke.ReasonRevoked, wantDetail: `CA "CN=Path Issuing CA" on the path`},
		{name: "the other intermediate's leaf is not touched", leaf: otherLeaf, issuer: other, crls: []revoke.IssuedCRL{rootRevokesInter, otherCRL}},
		{name: "no root CRL", leaf: leaf, issuer: inter, crls: []revoke.IssuedCRL{interCRL},
			wantReason: revoke.ReasonCRLMissing, wantDetail: `no CRL of "CN=Path Root", the issuer of CA "CN=Path Issuing CA"`},
		{name: "no intermediate CRL", leaf: leaf, issuer: inter, crls: []revoke.IssuedCRL{rootCRL},
			wantReason: revoke.ReasonNoCRLForIssuer},
		{name: "no CRL at all", leaf: leaf, issuer: inter, wantReason: revoke.ReasonCRLMissing},
		{name: "root CRL expired", leaf: leaf, issuer: inter, crls: []revoke.IssuedCRL{rootExpired, interCRL},
			wantReason: revoke.ReasonCRLExpired, wantDetail: `the CRL of "CN=Path Root"`},
		{name: "CRL of another intermediate only", leaf: leaf, issuer: inter, crls: []revoke.IssuedCRL{rootCRL, otherCRL},
			wantReason: revoke.ReasonNoCRLForIssuer},
		{name: "no CRL, revocation skipped", leaf: revokedLeaf, issuer: inter, skip: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			roots, inters := x509.NewCertPool(), x509.NewCertPool()
			roots.AddCert(root.Cert)
			inters.AddCert(tt.issuer.Cert)
			chains, err := tt.leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inters, CurrentTime: now,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
			if err != nil {
				t.Fatal(err)
			}
			f := revoke.Facts{Cert: tt.leaf, CAs: []*x509.Certificate{root.Cert}, Purpose: x509.ExtKeyUsageClientAuth,
				At: now, SkipRevocation: tt.skip}
			err = revoke.JudgePath(f, chains[0], tt.crls)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("JudgePath() = %v; want nil", err)
				}
				return
			}
			var ve *revoke.VerifyError
			if !errors.As(err, &ve) || ve.Reason != tt.wantReason || !strings.Contains(ve.Detail, tt.wantDetail) {
				t.Fatalf("JudgePath() = %v; want reason %s with detail containing %q", err, tt.wantReason, tt.wantDetail)
			}
		})
	}
	if err := revoke.JudgePath(revoke.Facts{Cert: leaf, Purpose: x509.ExtKeyUsageClientAuth, At: now}, []*x509.Certificate{inter.Cert}, nil); err == nil ||
		!strings.Contains(err.Error(), "the path must start with the certificate judged") {
		t.Errorf("JudgePath(path of another certificate) = %v", err)
	}
}

// TestJudgeRefusesKeyCertSignLeaf refuses, as a CA, a leaf without CA:TRUE
// whose key usage has keyCertSign (RFC 5280 4.2.1.9 forbids the pair).
func TestJudgeRefusesKeyCertSignLeaf(t *testing.T) {
	ca := testca.New(t, "KU Root")
	leaf, _ := ca.Leaf(t, &x509.Certificate{KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	err := revoke.JudgePath(revoke.Facts{Cert: leaf, Purpose: x509.ExtKeyUsageClientAuth, At: time.Now(), SkipRevocation: true},
		[]*x509.Certificate{leaf, ca.Cert}, nil)
	var ve *revoke.VerifyError
	if !errors.As(err, &ve) || ve.Reason != revoke.ReasonCACertificate || !strings.Contains(ve.Detail, "keyCertSign") {
		t.Fatalf("JudgePath(leaf with keyCertSign) = %v; want ca-certificate naming keyCertSign", err)
	}
}
