//go:build interop

package revoke_test

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"minica/internal/testca"
	"minica/revoke"
)

// TestOpenSSLDeltaAgreement is the agreement table of delta CRLs: for
// each complete CRL (with the freshest CRL extension, without which
// OpenSSL uses no delta) and delta CRL, issued a minute later, in one file
// in either order, `openssl verify -crl_check -use_deltas -extended_crl`
// and ParseCRLFile with JudgePath give the same verdict on a leaf, and the
// one expected.
//
// -extended_crl is needed: without it OpenSSL 3's get_crl_score does not
// set delta CRLs aside when it picks the complete CRL (its "don't process
// deltas" test is an else-branch of the extended-CRL test), so the newer
// delta is taken for the complete CRL and what only the complete CRL
// lists passes.
func TestOpenSSLDeltaAgreement(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	ca := testca.New(t, "Delta Agreement Root")
	leaf, _ := ca.Client(t, "delta-leaf")
	dir := t.TempDir()
	writeFile(t, dir, "ca.pem", ca.PEM())
	writeFile(t, dir, "leaf.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw}))
	at := now.Add(-2 * time.Minute) // thisUpdate of the complete CRLs
	entry := func(serial *big.Int, r revoke.Reason) revoke.Entry {
		return revoke.Entry{Serial: serial, RevokedAt: at.Add(-time.Minute), Reason: r}
	}
	other, other2 := testca.RandomSerial(t), testca.RandomSerial(t)
	s := leaf.SerialNumber
	tests := []struct {
		name            string
		complete, delta crlSpec
		revoked         bool
	}{
		{name: "revoked in the base",
			complete: crlSpec{number: 5, entries: []revoke.Entry{entry(s, revoke.KeyCompromise)}},
			delta:    crlSpec{number: 6, base: 5, entries: []revoke.Entry{entry(other, revoke.KeyCompromise)}}, revoked: true},
		{name: "revoked only in the delta",
			complete: crlSpec{number: 5, entries: []revoke.Entry{entry(other, revoke.Superseded)}},
			delta:    crlSpec{number: 6, base: 5, entries: []revoke.Entry{entry(s, revoke.KeyCompromise)}}, revoked: true},
		{name: "on hold in the base, removed from hold in the delta",
			complete: crlSpec{number: 5, entries: []revoke.Entry{entry(s, revoke.CertificateHold)}},
			delta:    crlSpec{number: 6, base: 5, entries: []revoke.Entry{entry(s, revoke.RemoveFromCRL)}}},
		{name: "on hold in the base, the delta silent",
			complete: crlSpec{number: 5, entries: []revoke.Entry{entry(s, revoke.CertificateHold)}},
			delta:    crlSpec{number: 6, base: 5, entries: []revoke.Entry{entry(other, revoke.RemoveFromCRL)}}, revoked: true},
		{name: "base too old: the delta's base above the complete CRL",
			complete: crlSpec{number: 5},
			delta:    crlSpec{number: 7, base: 6, entries: []revoke.Entry{entry(s, revoke.KeyCompromise)}}},
		{name: "delta for an earlier base, which still applies",
			complete: crlSpec{number: 5},
			delta:    crlSpec{number: 6, base: 3, entries: []revoke.Entry{entry(s, revoke.KeyCompromise)}}, revoked: true},
		{name: "delta numbered as the base",
			complete: crlSpec{number: 5},
			delta:    crlSpec{number: 5, base: 4, entries: []revoke.Entry{entry(s, revoke.KeyCompromise)}}},
		{name: "delta older than the base",
			complete: crlSpec{number: 5},
			delta:    crlSpec{number: 4, base: 3, entries: []revoke.Entry{entry(s, revoke.KeyCompromise)}}},
		{name: "not revoked anywhere",
			complete: crlSpec{number: 5, entries: []revoke.Entry{entry(other, revoke.KeyCompromise)}},
			delta:    crlSpec{number: 6, base: 5, entries: []revoke.Entry{entry(other2, revoke.CessationOfOperation)}}},
	}
	for _, tt := range tests {
		for _, deltaFirst := range []bool{false, true} {
			name := tt.name
			if deltaFirst {
				name += ", delta first"
			}
			t.Run(name, func(t *testing.T) {
				tt.complete.thisUpdate, tt.complete.ttl = at, 24*time.Hour
				tt.complete.freshest = []string{"http://crl.example.com/delta.crl"}
				tt.delta.thisUpdate, tt.delta.ttl = at.Add(time.Minute), 24*time.Hour
				complete, delta := signCRL(t, ca, tt.complete), signCRL(t, ca, tt.delta)
				file := pemCRLs(complete, delta)
				if deltaFirst {
					file = pemCRLs(delta, complete)
				}
				writeFile(t, dir, "crls.pem", file)
				gotOpenSSL := opensslRevoked(t, dir)
				gotMinica := minicaRevoked(t, file, ca, leaf, now)
				if gotOpenSSL != tt.revoked || gotMinica != tt.revoked {
					t.Errorf("revoked: openssl %v, minica %v; want %v", gotOpenSSL, gotMinica, tt.revoked)
				}
			})
		}
	}
}

// TestOpenSSLReadsDeltaExtensions: openssl reads the freshest CRL
// extension of a complete CRL and the critical delta CRL indicator.
func TestOpenSSLReadsDeltaExtensions(t *testing.T) {
	ca := testca.New(t, "Delta Text Root")
	dir := t.TempDir()
	at := time.Now().Add(-time.Minute)
	writeFile(t, dir, "complete.pem", pemCRLs(signCRL(t, ca, crlSpec{number: 5, thisUpdate: at,
		freshest: []string{"http://crl.example.com/delta.crl"}})))
	writeFile(t, dir, "delta.pem", pemCRLs(signCRL(t, ca, crlSpec{number: 6, base: 5, thisUpdate: at})))
	for file, want := range map[string][]string{
		"complete.pem": {"X509v3 Freshest CRL:", "URI:http://crl.example.com/delta.crl"},
		"delta.pem":    {"X509v3 Delta CRL Indicator: critical", "5"},
	} {
		out, err := runOpenSSL(t, dir, "crl", "-in", file, "-noout", "-text")
		for _, w := range want {
			if err != nil || !strings.Contains(string(out), w) {
				t.Errorf("openssl crl -text %s: %v; want %q in\n%s", file, err, w, out)
			}
		}
	}
}

// writeFile writes data to dir/name, or fails the test.
func writeFile(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// verifyErrors finds the errors `openssl verify` reports, one a line.
var verifyErrors = regexp.MustCompile(`(?m)^error \d+ at \d+ depth lookup: .*$`)

// opensslRevoked reports whether `openssl verify` with delta CRLs finds leaf.pem revoked by crls.pem; any other failure fails the test.
func opensslRevoked(t *testing.T, dir string) bool {
	t.Helper()
	out, err := runOpenSSL(t, dir, "verify", "-crl_check", "-use_deltas", "-extended_crl",
		"-CAfile", "ca.pem", "-CRLfile", "crls.pem", "leaf.pem")
	switch errs := verifyErrors.FindAllString(string(out), -1); {
	case err == nil && strings.TrimSpace(string(out)) == "leaf.pem: OK":
		return false
	case err != nil && len(errs) == 1 && errs[0] == "error 23 at 0 depth lookup: certificate revoked":
		return true
	}
	t.Fatalf("openssl verify: %v\n%s", err, out)
	return false
}

// minicaRevoked reports whether ParseCRLFile and JudgePath find leaf
// revoked by the CRL file data of ca at now; any other refusal fails the
// test.
func minicaRevoked(t *testing.T, data []byte, ca *testca.CA, leaf *x509.Certificate, now time.Time) bool {
	t.Helper()
	crls, err := revoke.ParseCRLFile(data, []*x509.Certificate{ca.Cert})
	if err != nil {
		t.Fatalf("ParseCRLFile() error = %v", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	chains, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: now})
	if err != nil {
		t.Fatalf("Verify() error = %v", err)
	}
	err = revoke.JudgePath(revoke.Facts{Cert: leaf, Purpose: x509.ExtKeyUsageClientAuth, At: now}, chains[0], crls)
	var ve *revoke.VerifyError
	switch {
	case err == nil:
		return false
	case errors.As(err, &ve) && ve.Reason == revoke.ReasonRevoked:
		return true
	}
	t.Fatalf("JudgePath() error = %v", err)
	return false
}
