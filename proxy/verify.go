package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"slices"
	"time"
)

// Reasons a client is refused, as logged and as the reason label of the
// handshake-failure and refused-request metrics.
const (
	ReasonNoCertificate = "no-certificate"
	ReasonUnknownCA     = "unknown-ca"
	ReasonExpired       = "expired"
	ReasonNotYetValid   = "not-yet-valid"
	ReasonWrongEKU      = "wrong-eku"
	ReasonNoEKU         = "no-eku"
	ReasonRevoked       = "revoked"
	ReasonCRLExpired    = "crl-expired"
	ReasonNotAllowed    = "not-allowed"
	ReasonNoCRL         = "no-crl-for-issuer"
	ReasonBadChain      = "bad-chain"
	ReasonTimeout       = "handshake-timeout"
	ReasonTLS           = "tls-error"
	// ReasonCACertificate refuses a client certificate with basicConstraints
	// CA:TRUE: a CA is never a client, whatever its EKU.
	ReasonCACertificate = "ca-certificate"
)

// VerifyError is the error of a refused client certificate; Reason is one
// of the Reason constants.
type VerifyError struct {
	Reason string
	Cert   *x509.Certificate // the client's certificate, nil if none
	Err    error
}

// Error names the reason, then the verifier's error if any.
func (e *VerifyError) Error() string {
	if e.Err != nil {
		return "client certificate refused: " + e.Reason + ": " + e.Err.Error()
	}
	return "client certificate refused: " + e.Reason
}

// Unwrap returns the x509 verification error, if any.
func (e *VerifyError) Unwrap() error { return e.Err }

// verifyClient checks a client's certificates (leaf first, as sent) against
// t at now: chain to a CA of the bundle, validity, then the checks of
// checkChains. It returns the verified chain. It serves open connections,
// verified again after a reload; handshakes leave the chain to Go's
// verifier (see verifyConn).
func verifyClient(certs []*x509.Certificate, t *trust, grace time.Duration, now time.Time) ([]*x509.Certificate, error) {
	if len(certs) == 0 {
		return nil, &VerifyError{Reason: ReasonNoCertificate}
	}
	leaf := certs[0]
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	chains, err := leaf.Verify(x509.VerifyOptions{
		Roots:         t.roots,
		Intermediates: inter,
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, &VerifyError{Reason: chainReason(err, leaf, now), Cert: leaf, Err: err}
	}
	return checkChains(leaf, chains, t, grace, now)
}

// verifyConn is the handshake's VerifyConnection against t. Go's verifier
// has already checked the chain against t's bundle and the validity at now
// (for a resumed session too: one whose chain no longer verifies falls back
// to a full handshake), so only checkChains remains; a state without
// verified chains is verified in full.
func verifyConn(cs tls.ConnectionState, t *trust, grace time.Duration, now time.Time) ([]*x509.Certificate, error) {
	if len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return verifyClient(cs.PeerCertificates, t, grace, now)
	}
	return checkChains(cs.PeerCertificates[0], cs.VerifiedChains, t, grace, now)
}

// checkChains makes the checks Go's verifier does not, on chains of leaf
// verified against t's bundle: leaf not a CA, EKU clientAuth present, issued by the CA
// whose CRL is loaded, CRL usable, not revoked. It returns the chain
// through the CRL's issuer.
func checkChains(leaf *x509.Certificate, chains [][]*x509.Certificate, t *trust, grace time.Duration, now time.Time) ([]*x509.Certificate, error) {
	// Go's verifier accepts a CA:TRUE leaf that lists clientAuth.
	if leaf.BasicConstraintsValid && leaf.IsCA {
		return nil, &VerifyError{Reason: ReasonCACertificate, Cert: leaf}
	}
	// Go's verifier treats a leaf without EKU as valid for any usage.
	if len(leaf.ExtKeyUsage) == 0 && len(leaf.UnknownExtKeyUsage) == 0 {
		return nil, &VerifyError{Reason: ReasonNoEKU, Cert: leaf}
	}
	if !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		return nil, &VerifyError{Reason: ReasonWrongEKU, Cert: leaf}
	}
	// One CRL covers the clients of one issuing CA: a client of another
	// CA of the bundle could not be revoked, so it is refused.
	i := slices.IndexFunc(chains, func(c []*x509.Certificate) bool {
		return len(c) >= 2 && c[1].Equal(t.crlIssuer)
	})
	if i < 0 {
		return nil, &VerifyError{Reason: ReasonNoCRL, Cert: leaf}
	}
	if crlState(t.crl, grace, now) == "expired" {
		return nil, &VerifyError{Reason: ReasonCRLExpired, Cert: leaf}
	}
	if t.crl.IsRevoked(leaf.SerialNumber) {
		return nil, &VerifyError{Reason: ReasonRevoked, Cert: leaf}
	}
	return chains[i], nil
}

func chainReason(err error, leaf *x509.Certificate, now time.Time) string {
	var inv x509.CertificateInvalidError
	switch {
	case errors.As(err, &x509.UnknownAuthorityError{}):
		return ReasonUnknownCA
	case errors.As(err, &inv) && inv.Reason == x509.Expired:
		if now.Before(leaf.NotBefore) {
			return ReasonNotYetValid
		}
		return ReasonExpired
	case errors.As(err, &inv) && inv.Reason == x509.IncompatibleUsage:
		return ReasonWrongEKU
	}
	return ReasonBadChain
}
