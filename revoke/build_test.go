package revoke_test

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"minica/internal/certlint"
	"minica/internal/testca"
	"minica/revoke"
)

var testNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func sampleEntries(at time.Time) []revoke.Entry {
	return []revoke.Entry{
		{Serial: big.NewInt(0x2a), RevokedAt: at.Add(-time.Hour), Reason: revoke.KeyCompromise},
		{Serial: big.NewInt(0x80), RevokedAt: at.Add(-2 * time.Hour), Reason: revoke.Unspecified},
		{Serial: new(big.Int).Lsh(big.NewInt(1), 158), RevokedAt: at, Reason: revoke.CertificateHold},
		{Serial: big.NewInt(7), RevokedAt: at.Add(-90 * 24 * time.Hour), Reason: revoke.AACompromise},
		{Serial: big.NewInt(8), RevokedAt: at.Add(-time.Minute), Reason: revoke.CACompromise},
	}
}

func TestBuildMatchesStdlib(t *testing.T) {
	keys := keyTypes(t)
	for _, keyName := range []string{"P-256", "P-384", "RSA-2048", "Ed25519"} {
		for _, tc := range []struct {
			name    string
			now     time.Time
			entries []revoke.Entry
		}{
			{name: "empty", now: testNow},
			{name: "entries", now: testNow, entries: sampleEntries(testNow)},
			// From 2050 on, RFC 5280 5.1.2.4 wants GeneralizedTime.
			{name: "generalized time", now: time.Date(2049, 12, 31, 23, 0, 0, 0, time.UTC),
				entries: sampleEntries(time.Date(2049, 12, 31, 23, 0, 0, 0, time.UTC))},
		} {
			t.Run(keyName+"/"+tc.name, func(t *testing.T) {
				ca := newCA(t, "Build Root "+keyName, keys[keyName], tc.now)
				p := revoke.Params{
					Issuer: ca.Cert, Signer: ca.Key, Number: big.NewInt(0x1234567),
					ThisUpdate: tc.now, NextUpdate: tc.now.Add(7 * 24 * time.Hour),
				}
				der := buildOrFatal(t, p, tc.entries)
				got, err := x509.ParseRevocationList(der)
				if err != nil {
					t.Fatalf("x509.ParseRevocationList() error = %v", err)
				}
				if err := got.CheckSignatureFrom(ca.Cert); err != nil {
					t.Fatalf("CheckSignatureFrom() error = %v", err)
				}
				checkFields(t, got, p, tc.entries)

				want, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
					Number: p.Number, ThisUpdate: p.ThisUpdate, NextUpdate: p.NextUpdate,
					RevokedCertificateEntries: stdlibEntries(slices.Values(tc.entries)),
				}, ca.Cert, ca.Key)
				if err != nil {
					t.Fatal(err)
				}
				wantCRL, err := x509.ParseRevocationList(want)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.RawTBSRevocationList, wantCRL.RawTBSRevocationList) {
					t.Errorf("TBS differs from x509.CreateRevocationList:\n got %x\nwant %x",
						got.RawTBSRevocationList, wantCRL.RawTBSRevocationList)
				}
				certlint.RevocationList(t, der)
				opensslVerifies(t, ca, der)
			})
		}
	}
}

func checkFields(t *testing.T, got *x509.RevocationList, p revoke.Params, entries []revoke.Entry) {
	t.Helper()
	if got.Number.Cmp(p.Number) != 0 {
		t.Errorf("Number = %v; want %v", got.Number, p.Number)
	}
	if !got.ThisUpdate.Equal(p.ThisUpdate) || !got.NextUpdate.Equal(p.NextUpdate) {
		t.Errorf("ThisUpdate, NextUpdate = %v, %v; want %v, %v", got.ThisUpdate, got.NextUpdate, p.ThisUpdate, p.NextUpdate)
	}
	if !bytes.Equal(got.RawIssuer, p.Issuer.RawSubject) {
		t.Errorf("RawIssuer = %x; want %x", got.RawIssuer, p.Issuer.RawSubject)
	}
	if !bytes.Equal(got.AuthorityKeyId, p.Issuer.SubjectKeyId) {
		t.Errorf("AuthorityKeyId = %x; want %x", got.AuthorityKeyId, p.Issuer.SubjectKeyId)
	}
	if len(got.RevokedCertificateEntries) != len(entries) {
		t.Fatalf("%d entries; want %d", len(got.RevokedCertificateEntries), len(entries))
	}
	for i, g := range got.RevokedCertificateEntries {
		w := entries[i]
		if g.SerialNumber.Cmp(w.Serial) != 0 || !g.RevocationTime.Equal(w.RevokedAt) || g.ReasonCode != int(w.Reason) {
			t.Errorf("entry %d = %x %v %d; want %x %v %d", i, g.SerialNumber, g.RevocationTime, g.ReasonCode,
				w.Serial, w.RevokedAt, int(w.Reason))
		}
		if w.Reason == revoke.Unspecified && len(g.Extensions) != 0 {
			t.Errorf("entry %d has %d extensions; want none for unspecified", i, len(g.Extensions))
		}
	}
}

// opensslVerifies checks der with `openssl crl -CAfile`. A missing openssl
// fails the test: interop is part of the contract.
func opensslVerifies(t *testing.T, ca *testca.CA, der []byte) {
	t.Helper()
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	crlFile := filepath.Join(dir, "crl.der")
	if err := os.WriteFile(caFile, ca.PEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crlFile, der, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("openssl", "crl", "-inform", "DER", "-in", crlFile, "-CAfile", caFile, "-noout").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "verify OK") {
		t.Errorf("openssl crl: %v\n%s", err, out)
	}
}

func TestBuildRejectsBadInput(t *testing.T) {
	ca := newCA(t, "Bad Input Root", testca.NewKey(t), testNow)
	other := testca.New(t, "Other Root")
	noSKID := *ca.Cert
	noSKID.SubjectKeyId = nil
	noCRLSign := *ca.Cert
	noCRLSign.KeyUsage = x509.KeyUsageCertSign
	huge := new(big.Int).Lsh(big.NewInt(1), 159) // 21 octets with the sign octet
	good := revoke.Params{Issuer: ca.Cert, Signer: ca.Key, Number: big.NewInt(1),
		ThisUpdate: testNow, NextUpdate: testNow.Add(time.Hour)}
	entry := func(serial int64) revoke.Entry {
		return revoke.Entry{Serial: big.NewInt(serial), RevokedAt: testNow.Add(-time.Minute)}
	}
	tests := []struct {
		name    string
		edit    func(p *revoke.Params)
		entries []revoke.Entry
		wantErr string
	}{
		{name: "next update equals this update", edit: func(p *revoke.Params) { p.NextUpdate = p.ThisUpdate },
			wantErr: "building CRL: next update 2030-01-02T03:04:05Z is not after this update 2030-01-02T03:04:05Z"},
		{name: "next update before this update", edit: func(p *revoke.Params) { p.NextUpdate = p.ThisUpdate.Add(-time.Hour) },
			wantErr: "building CRL: next update 2030-01-02T02:04:05Z is not after this update 2030-01-02T03:04:05Z"},
		{name: "nil number", edit: func(p *revoke.Params) { p.Number = nil },
			wantErr: "building CRL: CRL number <nil> is not positive"},
		{name: "zero number", edit: func(p *revoke.Params) { p.Number = big.NewInt(0) },
			wantErr: "building CRL: CRL number 0 is not positive"},
		{name: "negative number", edit: func(p *revoke.Params) { p.Number = big.NewInt(-3) },
			wantErr: "building CRL: CRL number -3 is not positive"},
		{name: "number over 20 octets", edit: func(p *revoke.Params) { p.Number = huge },
			wantErr: "building CRL: CRL number 8000000000000000000000000000000000000000 is longer than 20 octets"},
		{name: "nil issuer", edit: func(p *revoke.Params) { p.Issuer = nil },
			wantErr: "building CRL: no issuer certificate"},
		{name: "nil signer", edit: func(p *revoke.Params) { p.Signer = nil },
			wantErr: "building CRL: no signer"},
		{name: "issuer without subject key id", edit: func(p *revoke.Params) { p.Issuer = &noSKID },
			wantErr: "building CRL: issuer certificate has no subject key identifier"},
		{name: "issuer without cRLSign", edit: func(p *revoke.Params) { p.Issuer = &noCRLSign },
			wantErr: "building CRL: issuer certificate lacks the cRLSign key usage"},
		{name: "signer of another CA", edit: func(p *revoke.Params) { p.Signer = other.Key },
			wantErr: "building CRL: signer public key does not match the issuer certificate"},
		{name: "nil serial", entries: []revoke.Entry{entry(1), {RevokedAt: testNow}},
			wantErr: "building CRL: entry 1 has no serial number"},
		{name: "zero serial", entries: []revoke.Entry{entry(0)},
			wantErr: "building CRL: serial 0 is not positive"},
		{name: "negative serial", entries: []revoke.Entry{entry(-42)},
			wantErr: "building CRL: serial -2a is not positive"},
		{name: "serial over 20 octets", entries: []revoke.Entry{{Serial: huge, RevokedAt: testNow}},
			wantErr: "building CRL: serial 8000000000000000000000000000000000000000 is longer than 20 octets"},
		{name: "serial listed twice", entries: []revoke.Entry{entry(0x2a), entry(3), entry(0x2a)},
			wantErr: "building CRL: serial 2a listed twice"},
		{name: "revoked after this update", entries: []revoke.Entry{{Serial: big.NewInt(5), RevokedAt: testNow.Add(time.Second)}},
			wantErr: "building CRL: serial 5 revoked at 2030-01-02T03:04:06Z, after this update 2030-01-02T03:04:05Z"},
		{name: "no revocation time", entries: []revoke.Entry{{Serial: big.NewInt(5)}},
			wantErr: "building CRL: serial 5 has no revocation time"},
		{name: "reason code 7", entries: []revoke.Entry{{Serial: big.NewInt(5), RevokedAt: testNow, Reason: 7}},
			wantErr: "building CRL: serial 5 has invalid reason code 7"},
		{name: "removeFromCRL", entries: []revoke.Entry{{Serial: big.NewInt(5), RevokedAt: testNow, Reason: revoke.RemoveFromCRL}},
			wantErr: "building CRL: serial 5: reason removeFromCRL is only valid in delta CRLs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good
			if tt.edit != nil {
				tt.edit(&p)
			}
			der, err := revoke.Build(p, slices.Values(tt.entries))
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Build() error = %v; want %q", err, tt.wantErr)
			}
			if der != nil {
				t.Errorf("Build() returned %d bytes with an error", len(der))
			}
		})
	}
}

func TestBuildLargeSerialsAndManyEntries(t *testing.T) {
	ca := newCA(t, "Many Root", testca.NewKey(t), testNow)
	max20 := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 159), big.NewInt(1)) // 20 octets exactly
	entries := slices.Collect(synthEntries(5000, testNow))
	entries = append(entries, revoke.Entry{Serial: max20, RevokedAt: testNow, Reason: revoke.Superseded})
	p := revoke.Params{Issuer: ca.Cert, Signer: ca.Key, Number: max20, ThisUpdate: testNow, NextUpdate: testNow.Add(time.Hour)}
	der := buildOrFatal(t, p, entries)
	got, err := x509.ParseRevocationList(der)
	if err != nil {
		t.Fatalf("x509.ParseRevocationList() error = %v", err)
	}
	if err := got.CheckSignatureFrom(ca.Cert); err != nil {
		t.Fatalf("CheckSignatureFrom() error = %v", err)
	}
	checkFields(t, got, p, entries)
	opensslVerifies(t, ca, der)
}

// TestBuildReusedSerial: Build must not keep the Entry's big.Int, since a
// database scan may hand the same one over for every row.
func TestBuildReusedSerial(t *testing.T) {
	ca := newCA(t, "Reuse Root", testca.NewKey(t), testNow)
	p := revoke.Params{Issuer: ca.Cert, Signer: ca.Key, Number: big.NewInt(1), ThisUpdate: testNow, NextUpdate: testNow.Add(time.Hour)}
	streamed, err := revoke.Build(p, streamEntries(3000, testNow))
	if err != nil {
		t.Fatalf("Build(streamed) error = %v", err)
	}
	got, err := x509.ParseRevocationList(streamed)
	if err != nil {
		t.Fatal(err)
	}
	checkFields(t, got, p, slices.Collect(synthEntries(3000, testNow)))
}
