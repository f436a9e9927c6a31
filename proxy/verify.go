package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"time"

	"minica/revoke"
)

// Reasons a client is refused, as logged and as the reason label of the
// handshake-failure and refused-request metrics. Those of a certificate's
// checks are revoke's (revoke.Judge decides them), converted here, in one
// place; the others are the proxy's own.
const (
	ReasonNoCertificate = "no-certificate"
	ReasonUnknownCA     = string(revoke.ReasonUnknownCA)
	ReasonExpired       = string(revoke.ReasonExpired)
	ReasonNotYetValid   = string(revoke.ReasonNotYetValid)
	ReasonWrongEKU      = string(revoke.ReasonWrongEKU)
	ReasonNoEKU         = string(revoke.ReasonNoEKU)
	ReasonRevoked       = string(revoke.ReasonRevoked)
	ReasonCRLExpired    = string(revoke.ReasonCRLExpired)
	// ReasonCRLNotYetValid refuses clients while the proxy's clock is more
	// than a minute before the CRL's thisUpdate (it went back after the CRL
	// loaded).
	ReasonCRLNotYetValid = string(revoke.ReasonCRLNotYetValid)
	ReasonNoCRL          = string(revoke.ReasonNoCRLForIssuer)
	ReasonBadChain       = string(revoke.ReasonBadChain)
	ReasonTimeout        = "handshake-timeout"
	ReasonTLS            = "tls-error"
	// ReasonCACertificate refuses a client certificate with basicConstraints
	// CA:TRUE: a CA is never a client, whatever its EKU.
	ReasonCACertificate = string(revoke.ReasonCACertificate)
)

// VerifyError is the error of a refused client certificate; Reason is one
// of the Reason constants.
type VerifyError struct {
	Reason string
	Cert   *x509.Certificate // the client's certificate, nil if none
	Err    error
	// Revocation is the CRL entry of a revoked certificate (the client's,
	// or a CA's on its path), when the CRL can tell; else nil.
	Revocation *revoke.Entry
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
	for _, c := range t.inters {
		inter.AddCert(c)
	}
	chains, err := leaf.Verify(x509.VerifyOptions{
		Roots:         t.anchors,
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
// verified chains is verified in full. So is every client of a bundle that
// holds a hierarchy: Go's TLS stack took each CA of the bundle for a trust
// anchor, and the path must run up to the root for the CRL of each CA on it
// to be checked.
func verifyConn(cs tls.ConnectionState, t *trust, grace time.Duration, now time.Time) ([]*x509.Certificate, error) {
	if len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 || t.layered {
		return verifyClient(cs.PeerCertificates, t, grace, now)
	}
	return checkChains(cs.PeerCertificates[0], cs.VerifiedChains, t, grace, now)
}

// checkChains hands the checks Go's verifier does not make to
// revoke.JudgePath, for chains of leaf verified against t's bundle: the CRL
// of each CA on the path usable at now (within grace), leaf not a CA, EKU
// clientAuth present, issued by a CA whose CRL is loaded, neither leaf nor
// a CA above it revoked. It returns the chain the judge accepts (see
// revoke.JudgeChains).
func checkChains(leaf *x509.Certificate, chains [][]*x509.Certificate, t *trust, grace time.Duration, now time.Time) ([]*x509.Certificate, error) {
	f := revoke.Facts{Cert: leaf, CAs: t.cas, Purpose: x509.ExtKeyUsageClientAuth, Grace: grace, Skew: clockSkew, At: now}
	chain, err := revoke.JudgeChains(f, chains, t.crls)
	if err != nil {
		return nil, refusal(err, leaf)
	}
	return chain, nil
}

// refusal converts a refusal of revoke.Judge to the proxy's VerifyError.
func refusal(err error, leaf *x509.Certificate) *VerifyError {
	var ve *revoke.VerifyError
	if !errors.As(err, &ve) {
		return &VerifyError{Reason: ReasonBadChain, Cert: leaf, Err: err}
	}
	return &VerifyError{Reason: string(ve.Reason), Cert: leaf, Revocation: ve.Revocation}
}

// chainReason is the reason of a chain refused by Go's verifier.
func chainReason(err error, leaf *x509.Certificate, now time.Time) string {
	return string(revoke.ChainError(err, leaf, now).Reason)
}
