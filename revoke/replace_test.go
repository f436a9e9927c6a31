package revoke_test

import (
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"crypto/x509"

	"minica/internal/testca"
	"minica/revoke"
)

// TestParseCRLFile reads the CRL files the proxy and verify read alike:
// DER, PEM with text around it (RFC 7468), the CRLs of a hierarchy in one
// PEM file; and refuses what no CA of the bundle signed, a PEM block of
// another type, and two CRLs of one CA.
func TestParseCRLFile(t *testing.T) {
	now := time.Now()
	root := testca.NewRoot(t, "File Root")
	inter := root.Intermediate(t, "File Issuing CA")
	stranger := testca.NewRoot(t, "File Stranger")
	cas := []*x509.Certificate{root.Cert, inter.Cert}
	rootPEM, interPEM := root.CRL(t, 7, now, time.Hour), inter.CRL(t, 3, now, time.Hour)
	block, _ := pem.Decode(rootPEM)
	tests := []struct {
		name    string
		cas     []*x509.Certificate // nil: root and inter
		data    []byte
		want    []string // the issuers' CNs, in order
		wantIs  error
		wantErr string
	}{
		{name: "DER", data: block.Bytes, want: []string{"File Root"}},
		{name: "PEM", data: rootPEM, want: []string{"File Root"}},
		{name: "PEM with text around it", data: []byte("CRL of the root, issued today\n" + string(rootPEM) + "end of file\n"), want: []string{"File Root"}},
		{name: "two levels", data: append(append([]byte("# root\n"), rootPEM...), interPEM...), want: []string{"File Root", "File Issuing CA"}},
		{name: "a stranger's CRL", data: stranger.CRL(t, 1, now, time.Hour), wantIs: revoke.ErrUnverified,
			wantErr: `revoke: no CA of the bundle accepts the CRL: revoke: CRL issued by another CA: CRL issuer is "CN=File Stranger`},
		{name: "a stranger's CRL, against one CA", cas: []*x509.Certificate{root.Cert}, data: stranger.CRL(t, 1, now, time.Hour), wantIs: revoke.ErrWrongIssuer,
			wantErr: `revoke: CRL issued by another CA: CRL issuer is "CN=File Stranger", CA is "CN=File Root"`},
		{name: "a stranger's beside the root's", data: append(append([]byte{}, rootPEM...), stranger.CRL(t, 1, now, time.Hour)...), wantIs: revoke.ErrUnverified,
			wantErr: `CRL 2 of 2: revoke: no CA of the bundle accepts the CRL: `},
		{name: "garbage", data: []byte("<html>not a CRL</html>"), wantIs: revoke.ErrMalformed,
			wantErr: "revoke: no CA of the bundle accepts the CRL: revoke: malformed CRL: not a DER CertificateList"},
		{name: "a broken PEM block", data: []byte("-----BEGIN X509 CRL-----\nnot base64\n"), wantIs: revoke.ErrMalformed,
			wantErr: "revoke: malformed CRL: invalid PEM"},
		{name: "a certificate", data: append(append([]byte{}, rootPEM...), root.PEM()...), wantIs: revoke.ErrMalformed,
			wantErr: `PEM block 2 is "CERTIFICATE", not "X509 CRL"`},
		{name: "two of one CA", data: append(append([]byte{}, rootPEM...), root.CRL(t, 8, now, time.Hour)...), wantIs: revoke.ErrTwoCRLs,
			wantErr: `revoke: two CRLs of one CA ("CN=File Root")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bundle := cas
			if tt.cas != nil {
				bundle = tt.cas
			}
			got, err := revoke.ParseCRLFile(tt.data, bundle)
			if tt.wantErr != "" {
				if !errors.Is(err, tt.wantIs) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseCRLFile() error = %v; want %v containing %q", err, tt.wantIs, tt.wantErr)
				}
				// Against one CA it reads as that CA's refusal, and is
				// still no CA accepting it.
				if tt.cas != nil && !errors.Is(err, revoke.ErrUnverified) {
					t.Errorf("ParseCRLFile() error = %v; want it to match ErrUnverified too", err)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("ParseCRLFile() = %d CRLs, %v; want %d", len(got), err, len(tt.want))
			}
			for i, c := range got {
				if c.Issuer.Subject.CommonName != tt.want[i] {
					t.Errorf("CRL %d issued by %q; want %q", i+1, c.Issuer.Subject.CommonName, tt.want[i])
				}
				if _, ok := c.CRL.(*revoke.CRL); !ok {
					t.Errorf("CRL %d is a %T; want a *revoke.CRL from ParseCRL", i+1, c.CRL)
				}
			}
		})
	}
}

// TestMayReplace is the one rule for a CRL after another: a higher number
// replaces, the same number changes nothing, and a replay, a CRL from the
// future, another CA's, or one past its nextUpdate while the one held is
// current is refused.
func TestMayReplace(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	root := testca.NewRoot(t, "Replace Root")
	other := testca.NewRoot(t, "Replace Other")
	crl := func(ca *testca.CA, number int64, thisUpdate time.Time, ttl time.Duration) revoke.IssuedCRL {
		t.Helper()
		c, err := revoke.ParseCRL(ca.CRL(t, number, thisUpdate, ttl), ca.Cert)
		if err != nil {
			t.Fatal(err)
		}
		return revoke.IssuedCRL{CRL: c, Issuer: ca.Cert}
	}
	day := 24 * time.Hour
	held := crl(root, 5, now.Add(-day), 7*day)
	tests := []struct {
		name        string
		next, held  revoke.IssuedCRL
		wantReplace bool
		wantIs      error
		wantErr     string
	}{
		{name: "nothing held", next: crl(root, 1, now, day), wantReplace: true},
		{name: "higher number", next: crl(root, 6, now, day), held: held, wantReplace: true},
		{name: "same number", next: crl(root, 5, now, day), held: held},
		{name: "lower number", next: crl(root, 4, now, day), held: held, wantIs: revoke.ErrLowerNumber,
			wantErr: "number 4 is lower than 5, the number of the CRL held"},
		{name: "thisUpdate within the clock skew", next: crl(root, 6, now.Add(revoke.MaxClockSkew), day), held: held, wantReplace: true},
		{name: "thisUpdate in the future", next: crl(root, 6, now.Add(revoke.MaxClockSkew+time.Second), day), held: held,
			wantIs: revoke.ErrNotYetValid, wantErr: "this update 2030-01-02T03:05:06Z is after 2030-01-02T03:04:05Z"},
		{name: "expired, over a current one", next: crl(root, 6, now.Add(-3*day), day), held: held, wantIs: revoke.ErrExpired,
			wantErr: "next update 2029-12-31T03:04:05Z is past, and the CRL held (number 5) is current until 2030-01-08T03:04:05Z"},
		{name: "thisUpdate in the future, nothing held", next: crl(root, 6, now.Add(time.Hour), day), wantIs: revoke.ErrNotYetValid,
			wantErr: "this update 2030-01-02T04:04:05Z is after 2030-01-02T03:04:05Z"},
		{name: "expired, nothing held", next: crl(root, 6, now.Add(-3*day), day), wantReplace: true},
		{name: "expired, over an expired one", next: crl(root, 6, now.Add(-3*day), 2*day), held: crl(root, 5, now.Add(-4*day), day), wantReplace: true},
		{name: "another CA's", next: crl(other, 6, now, day), held: held, wantIs: revoke.ErrWrongIssuer,
			wantErr: `CRL of "CN=Replace Other" cannot replace the CRL of "CN=Replace Root"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			replace, err := revoke.MayReplace(tt.next, tt.held, now)
			if tt.wantIs != nil {
				if replace || !errors.Is(err, tt.wantIs) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("MayReplace() = %v, %v; want %v containing %q", replace, err, tt.wantIs, tt.wantErr)
				}
				return
			}
			if err != nil || replace != tt.wantReplace {
				t.Fatalf("MayReplace() = %v, %v; want %v", replace, err, tt.wantReplace)
			}
		})
	}
}
