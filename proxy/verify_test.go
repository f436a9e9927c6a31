package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"minica/identity"
	"minica/internal/testca"
)

func TestVerifyConn(t *testing.T) {
	e := newEnv(t, nil)
	tr := e.p.trust.Load()
	now := time.Now()
	alice, _ := e.ca.Client(t, "alice")
	noEKU, _ := e.ca.Leaf(t, &x509.Certificate{Subject: pkix.Name{CommonName: "no-eku"}, KeyUsage: x509.KeyUsageDigitalSignature})
	other := testca.New(t, "Test CA")
	stranger, _ := other.Client(t, "alice")
	// A sub-CA with clientAuth, signed by the CA: never a client.
	subCA, _ := e.ca.Leaf(t, &x509.Certificate{Subject: pkix.Name{CommonName: "sub ca"}, BasicConstraintsValid: true, IsCA: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	good := [][]*x509.Certificate{{alice, e.ca.Cert}}
	tests := []struct {
		name      string
		cs        tls.ConnectionState
		reason    string // "" means verified
		wantChain []*x509.Certificate
		at        time.Time // zero means now
		grace     time.Duration
	}{
		{name: "verified chain", cs: tls.ConnectionState{PeerCertificates: []*x509.Certificate{alice}, VerifiedChains: good}, wantChain: good[0]},
		{name: "no verified chain: verified in full", cs: tls.ConnectionState{PeerCertificates: []*x509.Certificate{alice}}, wantChain: good[0]},
		{name: "no certificate", cs: tls.ConnectionState{}, reason: ReasonNoCertificate},
		{name: "unknown CA, verified in full", cs: tls.ConnectionState{PeerCertificates: []*x509.Certificate{stranger}}, reason: ReasonUnknownCA},
		{name: "no EKU", cs: tls.ConnectionState{PeerCertificates: []*x509.Certificate{noEKU}, VerifiedChains: [][]*x509.Certificate{{noEKU, e.ca.Cert}}}, reason: ReasonNoEKU},
		{name: "chain not through the CRL's issuer", cs: tls.ConnectionState{PeerCertificates: []*x509.Certificate{stranger}, VerifiedChains: [][]*x509.Certificate{{stranger, other.Cert}}}, reason: ReasonNoCRL},
		{name: "CA certificate with clientAuth", cs: tls.ConnectionState{PeerCertificates: []*x509.Certificate{subCA}, VerifiedChains: [][]*x509.Certificate{{subCA, e.ca.Cert}}}, reason: ReasonCACertificate},
		{name: "CA certificate with clientAuth, verified in full", cs: tls.ConnectionState{PeerCertificates: []*x509.Certificate{subCA}}, reason: ReasonCACertificate},
		{name: "the CA itself", cs: tls.ConnectionState{PeerCertificates: []*x509.Certificate{e.ca.Cert}}, reason: ReasonCACertificate},
		{name: "second chain through the CRL's issuer", cs: tls.ConnectionState{PeerCertificates: []*x509.Certificate{alice}, VerifiedChains: [][]*x509.Certificate{{alice, other.Cert}, good[0]}}, wantChain: good[0]},
		// revoke.Judge looks at the CRL first, as `minica verify` does.
		{name: "CRL expired", cs: tls.ConnectionState{PeerCertificates: []*x509.Certificate{alice}, VerifiedChains: good},
			at: tr.crl.NextUpdate().Add(time.Second), reason: ReasonCRLExpired},
		{name: "CRL expired, CA certificate", cs: tls.ConnectionState{PeerCertificates: []*x509.Certificate{subCA}, VerifiedChains: [][]*x509.Certificate{{subCA, e.ca.Cert}}},
			at: tr.crl.NextUpdate().Add(time.Second), reason: ReasonCRLExpired},
		{name: "CRL within grace", cs: tls.ConnectionState{PeerCertificates: []*x509.Certificate{alice}, VerifiedChains: good},
			at: tr.crl.NextUpdate().Add(time.Minute), grace: time.Hour, wantChain: good[0]},
		{name: "clock before the CRL's thisUpdate, within the skew", cs: tls.ConnectionState{PeerCertificates: []*x509.Certificate{alice}, VerifiedChains: good},
			at: tr.crl.ThisUpdate().Add(-clockSkew), wantChain: good[0]},
		{name: "clock before the CRL's thisUpdate, beyond the skew", cs: tls.ConnectionState{PeerCertificates: []*x509.Certificate{alice}, VerifiedChains: good},
			at: tr.crl.ThisUpdate().Add(-clockSkew - time.Second), reason: ReasonCRLNotYetValid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := now
			if !tt.at.IsZero() {
				at = tt.at
			}
			chain, err := verifyConn(tt.cs, tr, tt.grace, at)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("verifyConn() error = %v", err)
				}
				if len(chain) != len(tt.wantChain) || !chain[0].Equal(tt.wantChain[0]) || !chain[1].Equal(tt.wantChain[1]) {
					t.Errorf("verifyConn() chain = %v; want %v", chain, tt.wantChain)
				}
				return
			}
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Reason != tt.reason {
				t.Fatalf("verifyConn() error = %v; want reason %s", err, tt.reason)
			}
		})
	}
}

func TestHandshakeReason(t *testing.T) {
	ca := testca.New(t, "Test CA")
	now := time.Now()
	future, _ := ca.Leaf(t, &x509.Certificate{Subject: pkix.Name{CommonName: "later"}, NotBefore: now.Add(time.Hour), NotAfter: now.Add(48 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	past, _ := ca.Leaf(t, &x509.Certificate{Subject: pkix.Name{CommonName: "earlier"}, NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	cve := func(leaf *x509.Certificate, err error) error {
		return &tls.CertificateVerificationError{UnverifiedCertificates: []*x509.Certificate{leaf}, Err: err}
	}
	tests := []struct {
		name     string
		err      error
		reason   string
		wantCert *x509.Certificate
	}{
		{name: "verify connection", err: fmt.Errorf("handshake: %w", &VerifyError{Reason: ReasonRevoked, Cert: past}), reason: ReasonRevoked, wantCert: past},
		{name: "unknown CA", err: cve(past, x509.UnknownAuthorityError{Cert: past}), reason: ReasonUnknownCA, wantCert: past},
		{name: "expired", err: cve(past, x509.CertificateInvalidError{Cert: past, Reason: x509.Expired}), reason: ReasonExpired, wantCert: past},
		{name: "not yet valid", err: cve(future, x509.CertificateInvalidError{Cert: future, Reason: x509.Expired}), reason: ReasonNotYetValid, wantCert: future},
		{name: "wrong EKU", err: cve(past, x509.CertificateInvalidError{Cert: past, Reason: x509.IncompatibleUsage}), reason: ReasonWrongEKU, wantCert: past},
		{name: "other chain error", err: cve(past, x509.CertificateInvalidError{Cert: past, Reason: x509.NotAuthorizedToSign}), reason: ReasonBadChain, wantCert: past},
		{name: "no certificate", err: errors.New("tls: client didn't provide a certificate"), reason: ReasonNoCertificate},
		{name: "timeout", err: context.DeadlineExceeded, reason: ReasonTimeout},
		{name: "other", err: errors.New("tls: first record does not look like a TLS handshake"), reason: ReasonTLS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, ve := handshakeReason(tt.err, now)
			if reason != tt.reason {
				t.Errorf("handshakeReason() reason = %q; want %q", reason, tt.reason)
			}
			switch {
			case tt.wantCert == nil && ve != nil:
				t.Errorf("handshakeReason() VerifyError = %v; want nil", ve)
			case tt.wantCert != nil && (ve == nil || ve.Cert != tt.wantCert):
				t.Errorf("handshakeReason() VerifyError = %v; want one for %s", ve, tt.wantCert.Subject)
			}
		})
	}
}

// TestHandshakeRefusesCACertificate: a sub-CA signed by the CA, with
// clientAuth and an allowed CN, is refused in the handshake.
func TestHandshakeRefusesCACertificate(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AllowCN = []string{"sub-ca"} })
	cert, key := e.ca.Leaf(t, &x509.Certificate{Subject: pkix.Name{CommonName: "sub-ca"}, BasicConstraintsValid: true, IsCA: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err := e.handshakeError(e.tlsConfig(cert, key)); err == nil || !strings.Contains(err.Error(), "remote error: tls: bad certificate") {
		t.Errorf("handshake error = %v; want alert bad_certificate", err)
	}
	e.waitLog("handshake-refused ", "reason="+ReasonCACertificate+" ", "serial="+identity.SerialHex(cert.SerialNumber))
}
