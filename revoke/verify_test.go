package revoke_test

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"minica/internal/testca"
	"minica/revoke"
)

func leaf(t *testing.T, ca *testca.CA, cn string, eku []x509.ExtKeyUsage, notBefore, notAfter time.Time) *x509.Certificate {
	t.Helper()
	cert, _ := ca.Leaf(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: eku,
		NotBefore:   notBefore,
		NotAfter:    notAfter,
	})
	return cert
}

func TestVerifyCertificate(t *testing.T) {
	ca := newCA(t, "Verify Root", testca.NewKey(t), testNow)
	other := newCA(t, "Other Root", testca.NewKey(t), testNow)
	forger := newCA(t, "Verify Root", testca.NewKey(t), testNow)
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	server := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	from, until := testNow.Add(-24*time.Hour), testNow.Add(90*24*time.Hour)

	alice := leaf(t, ca, "alice", client, from, until)
	bob := leaf(t, ca, "bob", client, from, until)
	web := leaf(t, ca, "web", server, from, until)
	both := leaf(t, ca, "both", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, from, until)
	noEKU := leaf(t, ca, "no eku", nil, from, until)
	old := leaf(t, ca, "old", client, testNow.Add(-48*time.Hour), testNow.Add(-time.Hour))
	future := leaf(t, ca, "future", client, testNow.Add(time.Hour), until)
	stranger := leaf(t, other, "stranger", client, from, until)
	forged := leaf(t, forger, "forged", client, from, until)
	revokedOld := leaf(t, ca, "revoked old", client, testNow.Add(-48*time.Hour), testNow.Add(-time.Hour))
	// CA:TRUE with clientAuth and serverAuth, signed by the CA: a sub-CA is
	// never a client or a server, whatever its EKU.
	subCA, _ := ca.Leaf(t, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "sub ca"},
		BasicConstraintsValid: true,
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		NotBefore:             from,
		NotAfter:              until,
	})
	// A CA that expired before the leaf it signed.
	shortCA := newCA(t, "Short Root", testca.NewKey(t), testNow.AddDate(-10, 0, 0).Add(-time.Hour))
	orphan := leaf(t, shortCA, "orphan", client, from, until)

	entries := []revoke.Entry{
		{Serial: bob.SerialNumber, RevokedAt: testNow.Add(-time.Hour), Reason: revoke.KeyCompromise},
		{Serial: revokedOld.SerialNumber, RevokedAt: testNow.Add(-2 * time.Hour), Reason: revoke.Superseded},
	}
	thisUpdate, nextUpdate := testNow.Add(-time.Minute), testNow.Add(7*24*time.Hour)
	crlOf := func(c *testca.CA, e []revoke.Entry) *revoke.CRL {
		return parseOrFatal(t, buildOrFatal(t, revoke.Params{Issuer: c.Cert, Signer: c.Key, Number: big.NewInt(2),
			ThisUpdate: thisUpdate, NextUpdate: nextUpdate}, e), c.Cert)
	}
	crl := crlOf(ca, entries)
	otherCRL := crlOf(other, nil)

	tests := []struct {
		name    string
		cert    *x509.Certificate
		edit    func(o *revoke.VerifyOptions)
		want    revoke.VerifyReason
		wantErr string
		wantIs  error
	}{
		{name: "valid client", cert: alice},
		{name: "valid server", cert: web, edit: func(o *revoke.VerifyOptions) { o.Purpose = x509.ExtKeyUsageServerAuth }},
		{name: "both usages as client", cert: both},
		{name: "no CRL", cert: alice, edit: func(o *revoke.VerifyOptions) { o.CRL = nil },
			want: revoke.ReasonCRLMissing, wantErr: "crl-missing: no CRL for the issuing CA"},
		{name: "CRL of another CA", cert: alice, edit: func(o *revoke.VerifyOptions) { o.CRL = otherCRL },
			want: revoke.ReasonCRLMissing, wantIs: revoke.ErrWrongIssuer,
			wantErr: `crl-missing: the CRL was checked against "CN=Other Root,O=minica tests", not the issuing CA "CN=Verify Root,O=minica tests"`},
		{name: "CRL expired", cert: alice, edit: func(o *revoke.VerifyOptions) { o.At = nextUpdate.Add(time.Second) },
			want: revoke.ReasonCRLExpired, wantIs: revoke.ErrExpired, wantErr: "crl-expired: CRL 2 expired at 2030-01-09T03:04:05Z"},
		{name: "CRL not yet valid", cert: alice, edit: func(o *revoke.VerifyOptions) { o.At = thisUpdate.Add(-time.Second) },
			want: revoke.ReasonCRLNotYetValid, wantIs: revoke.ErrNotYetValid,
			wantErr: "crl-not-yet-valid: CRL 2 is not valid before 2030-01-02T03:03:05Z"},
		{name: "CRL checked before the chain", cert: stranger, edit: func(o *revoke.VerifyOptions) { o.CRL = nil },
			want: revoke.ReasonCRLMissing, wantErr: "crl-missing: no CRL for the issuing CA"},
		{name: "another CA", cert: stranger, want: revoke.ReasonUnknownCA,
			wantErr: `unknown-ca: issued by "CN=Other Root,O=minica tests", not by "CN=Verify Root,O=minica tests"`},
		{name: "same name, another key", cert: forged, want: revoke.ReasonUnknownCA,
			wantErr: `unknown-ca: not signed by "CN=Verify Root,O=minica tests": x509: ECDSA verification failure`},
		{name: "CA expired", cert: orphan, edit: func(o *revoke.VerifyOptions) {
			o.Issuer = shortCA.Cert
			o.CRL = crlOfAt(t, shortCA, thisUpdate, nextUpdate)
		},
			want: revoke.ReasonExpired, wantErr: "expired: CA certificate expired at " + shortCA.Cert.NotAfter.UTC().Format(time.RFC3339) + " (checked at 2030-01-02T03:04:05Z)"},
		{name: "expired", cert: old, want: revoke.ReasonExpired,
			wantErr: "expired: certificate expired at 2030-01-02T02:04:05Z (checked at 2030-01-02T03:04:05Z)"},
		{name: "not yet valid", cert: future, want: revoke.ReasonNotYetValid,
			wantErr: "not-yet-valid: certificate not valid before 2030-01-02T04:04:05Z (checked at 2030-01-02T03:04:05Z)"},
		{name: "no EKU", cert: noEKU, want: revoke.ReasonNoEKU,
			wantErr: "no-eku: certificate has no extended key usage; clientAuth is required"},
		{name: "server certificate as client", cert: web, want: revoke.ReasonWrongEKU,
			wantErr: "wrong-eku: extended key usage [serverAuth] does not include clientAuth"},
		{name: "client certificate as server", cert: alice, edit: func(o *revoke.VerifyOptions) { o.Purpose = x509.ExtKeyUsageServerAuth },
			want: revoke.ReasonWrongEKU, wantErr: "wrong-eku: extended key usage [clientAuth] does not include serverAuth"},
		{name: "CA certificate as client", cert: subCA, want: revoke.ReasonCACertificate,
			wantErr: "ca-certificate: the certificate is a CA (basicConstraints CA:TRUE), not a client or server certificate"},
		{name: "CA certificate as server", cert: subCA, edit: func(o *revoke.VerifyOptions) { o.Purpose = x509.ExtKeyUsageServerAuth },
			want: revoke.ReasonCACertificate, wantErr: "ca-certificate: the certificate is a CA (basicConstraints CA:TRUE), not a client or server certificate"},
		{name: "the CA itself", cert: ca.Cert, want: revoke.ReasonCACertificate,
			wantErr: "ca-certificate: the certificate is a CA (basicConstraints CA:TRUE), not a client or server certificate"},
		{name: "revoked", cert: bob, want: revoke.ReasonRevoked,
			wantErr: "revoked: serial " + bob.SerialNumber.Text(16) + " revoked at 2030-01-02T02:04:05Z (keyCompromise)"},
		{name: "revoked and expired says expired", cert: revokedOld, want: revoke.ReasonExpired,
			wantErr: "expired: certificate expired at 2030-01-02T02:04:05Z (checked at 2030-01-02T03:04:05Z)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := revoke.VerifyOptions{Issuer: ca.Cert, CRL: crl, Purpose: x509.ExtKeyUsageClientAuth, At: testNow}
			if tt.edit != nil {
				tt.edit(&opts)
			}
			err := revoke.VerifyCertificate(tt.cert, opts)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("VerifyCertificate() error = %v; want nil", err)
				}
				return
			}
			var ve *revoke.VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("VerifyCertificate() error = %v; want a *VerifyError", err)
			}
			if ve.Reason != tt.want || err.Error() != tt.wantErr {
				t.Errorf("VerifyCertificate() = %q, %q; want %q, %q", ve.Reason, err, tt.want, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("VerifyCertificate() error %v does not wrap %v", err, tt.wantIs)
			}
			if (ve.Reason == revoke.ReasonRevoked) != (ve.Revocation != nil) {
				t.Errorf("Revocation = %v for reason %s", ve.Revocation, ve.Reason)
			}
			if ve.Revocation != nil && (ve.Revocation.Reason != revoke.KeyCompromise || !ve.Revocation.RevokedAt.Equal(entries[0].RevokedAt)) {
				t.Errorf("Revocation = %+v; want %+v", ve.Revocation, entries[0])
			}
		})
	}
}

func crlOfAt(t *testing.T, c *testca.CA, thisUpdate, nextUpdate time.Time) *revoke.CRL {
	t.Helper()
	return parseOrFatal(t, buildOrFatal(t, revoke.Params{Issuer: c.Cert, Signer: c.Key, Number: big.NewInt(1),
		ThisUpdate: thisUpdate, NextUpdate: nextUpdate}, nil), c.Cert)
}

func TestVerifyCertificateMisuse(t *testing.T) {
	ca := newCA(t, "Misuse Root", testca.NewKey(t), testNow)
	alice := leaf(t, ca, "alice", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, testNow.Add(-time.Hour), testNow.Add(time.Hour))
	crl := crlOfAt(t, ca, testNow, testNow.Add(time.Hour))
	for _, tt := range []struct {
		name    string
		cert    *x509.Certificate
		opts    revoke.VerifyOptions
		wantErr string
	}{
		{name: "any purpose", cert: alice, opts: revoke.VerifyOptions{Issuer: ca.Cert, CRL: crl, At: testNow},
			wantErr: "verifying certificate: a specific purpose is required"},
		{name: "nil certificate", opts: revoke.VerifyOptions{Issuer: ca.Cert, CRL: crl, Purpose: x509.ExtKeyUsageClientAuth, At: testNow},
			wantErr: "verifying certificate: certificate and issuer are required"},
		{name: "nil issuer", cert: alice, opts: revoke.VerifyOptions{CRL: crl, Purpose: x509.ExtKeyUsageClientAuth, At: testNow},
			wantErr: "verifying certificate: certificate and issuer are required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := revoke.VerifyCertificate(tt.cert, tt.opts)
			var ve *revoke.VerifyError
			if err == nil || err.Error() != tt.wantErr || errors.As(err, &ve) {
				t.Errorf("VerifyCertificate() error = %v; want plain %q", err, tt.wantErr)
			}
		})
	}
}

func TestReasons(t *testing.T) {
	for _, name := range revoke.ReasonNames() {
		r, err := revoke.ParseReason(name)
		if err != nil || r.String() != name {
			t.Errorf("ParseReason(%q) = %v, %v; want round trip", name, r, err)
		}
	}
	for in, want := range map[string]revoke.Reason{
		"KEYCOMPROMISE": revoke.KeyCompromise, "cacompromise": revoke.CACompromise, "Unspecified": revoke.Unspecified,
		"removefromcrl": revoke.RemoveFromCRL, "AACompromise": revoke.AACompromise, "certificateHold": revoke.CertificateHold,
	} {
		if got, err := revoke.ParseReason(in); err != nil || got != want {
			t.Errorf("ParseReason(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	wantCodes := []int{0, 1, 2, 3, 4, 5, 6, 8, 9, 10}
	var codes []int
	for _, name := range revoke.ReasonNames() {
		r, _ := revoke.ParseReason(name)
		codes = append(codes, int(r))
	}
	if !slices.Equal(codes, wantCodes) {
		t.Errorf("reason codes = %v; want %v", codes, wantCodes)
	}
	for _, bad := range []string{"", "key compromise", "7", "keyCompromised"} {
		_, err := revoke.ParseReason(bad)
		want := `unknown revocation reason "` + bad + `" (valid: unspecified, keyCompromise, cACompromise, affiliationChanged, superseded, cessationOfOperation, certificateHold, removeFromCRL, privilegeWithdrawn, aACompromise)`
		if err == nil || err.Error() != want {
			t.Errorf("ParseReason(%q) error = %v; want %q", bad, err, want)
		}
	}
	if s := revoke.Reason(7).String(); s != "reason(7)" {
		t.Errorf("Reason(7).String() = %q", s)
	}
	if revoke.Reason(7).Valid() || revoke.Reason(-1).Valid() || revoke.Reason(11).Valid() || !revoke.Reason(10).Valid() {
		t.Errorf("Valid() wrong at the edges")
	}
}

func TestJudge(t *testing.T) {
	ca := newCA(t, "Judge Root", testca.NewKey(t), testNow)
	other := newCA(t, "Judge Other", testca.NewKey(t), testNow)
	third := newCA(t, "Judge Third", testca.NewKey(t), testNow)
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	from, until := testNow.Add(-24*time.Hour), testNow.Add(90*24*time.Hour)
	alice := leaf(t, ca, "alice", client, from, until)
	bob := leaf(t, ca, "bob", client, from, until)
	carol := leaf(t, ca, "carol", client, from, until)
	noEKU := leaf(t, ca, "no eku", nil, from, until)
	thisUpdate, nextUpdate := testNow.Add(-time.Minute), testNow.Add(time.Hour)
	entry := revoke.Entry{Serial: bob.SerialNumber, RevokedAt: testNow.Add(-time.Hour), Reason: revoke.KeyCompromise}
	crl := parseOrFatal(t, buildOrFatal(t, revoke.Params{Issuer: ca.Cert, Signer: ca.Key, Number: big.NewInt(7),
		ThisUpdate: thisUpdate, NextUpdate: nextUpdate}, []revoke.Entry{entry}), ca.Cert)
	otherCRL := crlOfAt(t, other, thisUpdate, nextUpdate)
	logged := func(serial *big.Int) (*revoke.Entry, error) {
		if serial.Cmp(carol.SerialNumber) == 0 || serial.Cmp(bob.SerialNumber) == 0 {
			return &revoke.Entry{Serial: serial, RevokedAt: testNow.Add(-2 * time.Hour), Reason: revoke.Superseded}, nil
		}
		return nil, nil
	}
	chainErr := &revoke.VerifyError{Reason: revoke.ReasonUnknownCA, Detail: "from the chain"}
	carolLogged := "revoked: serial " + carol.SerialNumber.Text(16) + " revoked at 2030-01-02T01:04:05Z (superseded); the published CRL does not list it yet"

	tests := []struct {
		name        string
		edit        func(f *revoke.Facts)
		wantErr     string
		unpublished bool
	}{
		{name: "valid"},
		{name: "nil certificate", edit: func(f *revoke.Facts) { f.Cert = nil }, wantErr: "judging certificate: a certificate is required"},
		{name: "any purpose", edit: func(f *revoke.Facts) { f.Purpose = x509.ExtKeyUsageAny }, wantErr: "judging certificate: a specific purpose is required"},
		{name: "no CRL", edit: func(f *revoke.Facts) { f.CRL, f.CRLIssuer = nil, nil }, wantErr: "crl-missing: no CRL for the issuing CA"},
		{name: "CRL of a CA outside the bundle", edit: func(f *revoke.Facts) { f.CAs = []*x509.Certificate{other.Cert} },
			wantErr: `crl-missing: the CRL was checked against "CN=Judge Root,O=minica tests", not the issuing CA "CN=Judge Other,O=minica tests"`},
		{name: "CRL of a CA outside a bundle of two", edit: func(f *revoke.Facts) {
			f.CAs = append(f.CAs, third.Cert)
			f.CRL, f.CRLIssuer = otherCRL, other.Cert
		},
			wantErr: `crl-missing: the CRL was checked against "CN=Judge Other,O=minica tests", not a CA of the bundle`},
		{name: "CRL of another CA of the bundle", edit: func(f *revoke.Facts) {
			f.CAs = append(f.CAs, other.Cert)
			f.CRL, f.CRLIssuer = otherCRL, other.Cert
		}, wantErr: `no-crl-for-issuer: issued by "CN=Judge Root,O=minica tests", whose CRL is not the one in use (of "CN=Judge Other,O=minica tests")`},
		{name: "no issuer known", edit: func(f *revoke.Facts) { f.Issuer = nil },
			wantErr: `no-crl-for-issuer: issued by "CN=Judge Root,O=minica tests", whose CRL is not the one in use (of "CN=Judge Root,O=minica tests")`},
		{name: "at nextUpdate", edit: func(f *revoke.Facts) { f.At = nextUpdate }},
		{name: "CRL expired", edit: func(f *revoke.Facts) { f.At = nextUpdate.Add(time.Nanosecond) },
			wantErr: "crl-expired: CRL 7 expired at 2030-01-02T04:04:05Z"},
		{name: "CRL within grace", edit: func(f *revoke.Facts) { f.At, f.Grace = nextUpdate.Add(time.Hour), time.Hour }},
		{name: "CRL beyond grace", edit: func(f *revoke.Facts) { f.At, f.Grace = nextUpdate.Add(time.Hour+time.Nanosecond), time.Hour },
			wantErr: "crl-expired: CRL 7 expired at 2030-01-02T04:04:05Z"},
		{name: "CRL not yet valid", edit: func(f *revoke.Facts) { f.At = thisUpdate.Add(-time.Nanosecond) },
			wantErr: "crl-not-yet-valid: CRL 7 is not valid before 2030-01-02T03:03:05Z"},
		{name: "CRL not yet valid, within skew", edit: func(f *revoke.Facts) { f.At, f.Skew = thisUpdate.Add(-time.Minute), time.Minute }},
		{name: "CRL not yet valid, beyond skew", edit: func(f *revoke.Facts) { f.At, f.Skew = thisUpdate.Add(-time.Minute-time.Nanosecond), time.Minute },
			wantErr: "crl-not-yet-valid: CRL 7 is not valid before 2030-01-02T03:03:05Z"},
		{name: "chain refusal", edit: func(f *revoke.Facts) { f.Chain = chainErr }, wantErr: "unknown-ca: from the chain"},
		{name: "CRL before the chain", edit: func(f *revoke.Facts) { f.Chain, f.At = chainErr, nextUpdate.Add(time.Second) },
			wantErr: "crl-expired: CRL 7 expired at 2030-01-02T04:04:05Z"},
		{name: "CRL before the EKU", edit: func(f *revoke.Facts) { f.Cert, f.At = noEKU, nextUpdate.Add(time.Second) },
			wantErr: "crl-expired: CRL 7 expired at 2030-01-02T04:04:05Z"},
		{name: "chain before the EKU", edit: func(f *revoke.Facts) { f.Cert, f.Chain = noEKU, chainErr }, wantErr: "unknown-ca: from the chain"},
		{name: "no EKU", edit: func(f *revoke.Facts) { f.Cert = noEKU }, wantErr: "no-eku: certificate has no extended key usage; clientAuth is required"},
		{name: "revoked", edit: func(f *revoke.Facts) { f.Cert = bob },
			wantErr: "revoked: serial " + bob.SerialNumber.Text(16) + " revoked at 2030-01-02T02:04:05Z (keyCompromise)"},
		{name: "revoked, CRL without Lookup", edit: func(f *revoke.Facts) { f.Cert, f.CRL = bob, struct{ revoke.Revocations }{crl} },
			wantErr: "revoked: serial " + bob.SerialNumber.Text(16) + " is on the CRL"},
		{name: "revoked on the CRL and in the log: the CRL's entry", edit: func(f *revoke.Facts) { f.Cert, f.Logged = bob, logged },
			wantErr: "revoked: serial " + bob.SerialNumber.Text(16) + " revoked at 2030-01-02T02:04:05Z (keyCompromise)"},
		{name: "revoked in the log only", edit: func(f *revoke.Facts) { f.Cert, f.Logged = carol, logged },
			wantErr: carolLogged, unpublished: true},
		{name: "revoked in the log, CRL expired", edit: func(f *revoke.Facts) { f.Cert, f.Logged, f.At = carol, logged, nextUpdate.Add(time.Second) },
			wantErr: carolLogged, unpublished: true},
		{name: "revoked in the log, no CRL", edit: func(f *revoke.Facts) { f.Cert, f.Logged, f.CRL, f.CRLIssuer = carol, logged, nil, nil },
			wantErr: carolLogged, unpublished: true},
		{name: "revoked in the log, not signed by the issuer", edit: func(f *revoke.Facts) {
			f.Cert, f.Logged, f.CRL, f.CRLIssuer, f.Issuer = carol, logged, nil, nil, other.Cert
		}, wantErr: "crl-missing: no CRL for the issuing CA"},
		{name: "revoked in the log, chain refused", edit: func(f *revoke.Facts) { f.Cert, f.Logged, f.Chain = carol, logged, chainErr },
			wantErr: "unknown-ca: from the chain"},
		{name: "log unreadable", edit: func(f *revoke.Facts) {
			f.Logged = func(*big.Int) (*revoke.Entry, error) { return nil, errors.New("reading log: broken") }
		}, wantErr: "reading log: broken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := revoke.Facts{Cert: alice, Issuer: ca.Cert, CAs: []*x509.Certificate{ca.Cert}, CRL: crl, CRLIssuer: ca.Cert,
				Purpose: x509.ExtKeyUsageClientAuth, At: testNow}
			if tt.edit != nil {
				tt.edit(&f)
			}
			err := revoke.Judge(f)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Judge() = %v; want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Judge() = %v; want %q", err, tt.wantErr)
			}
			var ve *revoke.VerifyError
			if errors.As(err, &ve) && ve.Unpublished != tt.unpublished {
				t.Errorf("Unpublished = %v; want %v", ve.Unpublished, tt.unpublished)
			}
			if errors.As(err, &ve) && ve.Reason == revoke.ReasonRevoked && ve.Revocation == nil && !strings.HasSuffix(tt.wantErr, "is on the CRL") {
				t.Errorf("Revocation = nil for %v", err)
			}
			if err := revoke.JudgeCRL(f); (err == nil) != (ve == nil || !strings.HasPrefix(string(ve.Reason), "crl-")) && !tt.unpublished {
				t.Errorf("JudgeCRL() = %v, Judge() = %v: disagree on the CRL", err, ve)
			}
		})
	}
}

func TestChainError(t *testing.T) {
	ca := newCA(t, "Chain Root", testca.NewKey(t), testNow)
	other := newCA(t, "Chain Other", testca.NewKey(t), testNow)
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	from, until := testNow.Add(-24*time.Hour), testNow.Add(90*24*time.Hour)
	alice := leaf(t, ca, "alice", client, from, until)
	web := leaf(t, ca, "web", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, from, until)
	stranger := leaf(t, other, "stranger", client, from, until)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, tt := range []struct {
		name string
		cert *x509.Certificate
		at   time.Time
		want revoke.VerifyReason
	}{
		{name: "unknown CA", cert: stranger, at: testNow, want: revoke.ReasonUnknownCA},
		{name: "expired", cert: alice, at: until.Add(time.Second), want: revoke.ReasonExpired},
		{name: "not yet valid", cert: alice, at: from.Add(-time.Second), want: revoke.ReasonNotYetValid},
		{name: "wrong usage", cert: web, at: testNow, want: revoke.ReasonWrongEKU},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: tt.at, KeyUsages: client})
			if err == nil {
				t.Fatal("Verify() = nil; want an error")
			}
			ve := revoke.ChainError(err, tt.cert, tt.at)
			if ve.Reason != tt.want || !errors.Is(ve, err) || ve.Detail != err.Error() {
				t.Errorf("ChainError() = %q, %v; want %q wrapping %v", ve.Reason, ve, tt.want, err)
			}
		})
	}
	if ve := revoke.ChainError(errors.New("odd"), alice, testNow); ve.Reason != revoke.ReasonBadChain || ve.Error() != "bad-chain: odd" {
		t.Errorf("ChainError(odd) = %v; want bad-chain: odd", ve)
	}
}
