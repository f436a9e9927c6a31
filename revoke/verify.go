package revoke

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"time"
)

// VerifyReason names why VerifyCertificate refused a certificate. The values
// are stable, lowercase and short, fit for log fields and metric labels.
type VerifyReason string

// The reasons VerifyCertificate reports.
const (
	ReasonUnknownCA      VerifyReason = "unknown-ca"
	ReasonExpired        VerifyReason = "expired"
	ReasonNotYetValid    VerifyReason = "not-yet-valid"
	ReasonWrongEKU       VerifyReason = "wrong-eku"
	ReasonNoEKU          VerifyReason = "no-eku"
	ReasonRevoked        VerifyReason = "revoked"
	ReasonCRLMissing     VerifyReason = "crl-missing"
	ReasonCRLExpired     VerifyReason = "crl-expired"
	ReasonCRLNotYetValid VerifyReason = "crl-not-yet-valid"
	// ReasonCACertificate refuses a certificate with basicConstraints
	// CA:TRUE: a CA is never a client or a server, whatever its EKU.
	ReasonCACertificate VerifyReason = "ca-certificate"
)

// VerifyError is the error VerifyCertificate returns when it refuses a
// certificate.
type VerifyError struct {
	// Reason classifies the failure.
	Reason VerifyReason
	// Detail is a human-readable sentence naming the dates, usages or
	// revocation involved.
	Detail string
	// Revocation is the CRL entry when Reason is ReasonRevoked, else nil.
	Revocation *Entry
	// Err is the underlying error, if any (for example ErrExpired).
	Err error
}

// Error returns the reason followed by the detail.
func (e *VerifyError) Error() string {
	return string(e.Reason) + ": " + e.Detail
}

// Unwrap returns the underlying error.
func (e *VerifyError) Unwrap() error { return e.Err }

// VerifyOptions are the inputs of VerifyCertificate besides the certificate.
type VerifyOptions struct {
	// Issuer is the CA certificate the certificate must be signed by.
	Issuer *x509.Certificate
	// CRL is the issuer's current CRL, as returned by ParseCRL for Issuer.
	// A nil CRL is refused: no CRL never means nothing is revoked.
	CRL *CRL
	// Purpose is the extended key usage required, such as
	// x509.ExtKeyUsageClientAuth. It must not be x509.ExtKeyUsageAny.
	Purpose x509.ExtKeyUsage
	// At is the time of the check.
	At time.Time
}

// VerifyCertificate judges cert the way the proxy does, in this order: the
// CRL is present, issued for opts.Issuer and current at opts.At; cert is
// signed by opts.Issuer, which must itself be valid at opts.At; cert is
// valid at opts.At; cert is not a CA (basicConstraints CA:TRUE); cert has
// an extended key usage extension that lists opts.Purpose
// (anyExtendedKeyUsage does not count); the CRL does not list cert's serial. Refusals are *VerifyError values.
func VerifyCertificate(cert *x509.Certificate, opts VerifyOptions) error {
	if cert == nil || opts.Issuer == nil {
		return errors.New("verifying certificate: certificate and issuer are required")
	}
	if opts.Purpose == x509.ExtKeyUsageAny {
		return errors.New("verifying certificate: a specific purpose is required")
	}
	if err := checkCRL(opts); err != nil {
		return err
	}
	if err := checkChain(cert, opts.Issuer, opts.At); err != nil {
		return err
	}
	if err := checkValidity("certificate", cert, opts.At); err != nil {
		return err
	}
	if cert.BasicConstraintsValid && cert.IsCA {
		return &VerifyError{Reason: ReasonCACertificate,
			Detail: "the certificate is a CA (basicConstraints CA:TRUE), not a client or server certificate"}
	}
	if err := checkEKU(cert, opts.Purpose); err != nil {
		return err
	}
	if e, revoked := opts.CRL.Lookup(cert.SerialNumber); revoked {
		return &VerifyError{Reason: ReasonRevoked, Revocation: &e,
			Detail: fmt.Sprintf("serial %x revoked at %s (%s)", cert.SerialNumber, rfc3339(e.RevokedAt), e.Reason)}
	}
	return nil
}

func checkCRL(opts VerifyOptions) error {
	crl := opts.CRL
	if crl == nil {
		return &VerifyError{Reason: ReasonCRLMissing, Detail: "no CRL for the issuing CA"}
	}
	if !bytes.Equal(crl.issuer.Raw, opts.Issuer.Raw) {
		return &VerifyError{Reason: ReasonCRLMissing, Err: ErrWrongIssuer,
			Detail: fmt.Sprintf("the CRL was checked against %q, not the issuing CA %q", crl.issuer.Subject, opts.Issuer.Subject)}
	}
	err := crl.CheckTime(opts.At)
	switch {
	case errors.Is(err, ErrExpired):
		return &VerifyError{Reason: ReasonCRLExpired, Err: err,
			Detail: fmt.Sprintf("CRL %s expired at %s", crl.number, rfc3339(crl.nextUpdate))}
	case errors.Is(err, ErrNotYetValid):
		return &VerifyError{Reason: ReasonCRLNotYetValid, Err: err,
			Detail: fmt.Sprintf("CRL %s is not valid before %s", crl.number, rfc3339(crl.thisUpdate))}
	}
	return err
}

func checkChain(cert, issuer *x509.Certificate, at time.Time) error {
	if !bytes.Equal(cert.RawIssuer, issuer.RawSubject) {
		return &VerifyError{Reason: ReasonUnknownCA,
			Detail: fmt.Sprintf("issued by %q, not by %q", cert.Issuer, issuer.Subject)}
	}
	if err := cert.CheckSignatureFrom(issuer); err != nil {
		return &VerifyError{Reason: ReasonUnknownCA, Err: err,
			Detail: fmt.Sprintf("not signed by %q: %v", issuer.Subject, err)}
	}
	return checkValidity("CA certificate", issuer, at)
}

func checkValidity(what string, cert *x509.Certificate, at time.Time) error {
	if at.Before(cert.NotBefore) {
		return &VerifyError{Reason: ReasonNotYetValid,
			Detail: fmt.Sprintf("%s not valid before %s (checked at %s)", what, rfc3339(cert.NotBefore), rfc3339(at))}
	}
	if at.After(cert.NotAfter) {
		return &VerifyError{Reason: ReasonExpired,
			Detail: fmt.Sprintf("%s expired at %s (checked at %s)", what, rfc3339(cert.NotAfter), rfc3339(at))}
	}
	return nil
}

func checkEKU(cert *x509.Certificate, purpose x509.ExtKeyUsage) error {
	if len(cert.ExtKeyUsage) == 0 && len(cert.UnknownExtKeyUsage) == 0 {
		return &VerifyError{Reason: ReasonNoEKU,
			Detail: fmt.Sprintf("certificate has no extended key usage; %s is required", ekuName(purpose))}
	}
	if !slices.Contains(cert.ExtKeyUsage, purpose) {
		names := make([]string, 0, len(cert.ExtKeyUsage)+len(cert.UnknownExtKeyUsage))
		for _, u := range cert.ExtKeyUsage {
			names = append(names, ekuName(u))
		}
		for _, oid := range cert.UnknownExtKeyUsage {
			names = append(names, oid.String())
		}
		return &VerifyError{Reason: ReasonWrongEKU,
			Detail: fmt.Sprintf("extended key usage %v does not include %s", names, ekuName(purpose))}
	}
	return nil
}

// ekuName returns the RFC 5280 name of the common extended key usages.
func ekuName(u x509.ExtKeyUsage) string {
	switch u {
	case x509.ExtKeyUsageAny:
		return "anyExtendedKeyUsage"
	case x509.ExtKeyUsageServerAuth:
		return "serverAuth"
	case x509.ExtKeyUsageClientAuth:
		return "clientAuth"
	case x509.ExtKeyUsageCodeSigning:
		return "codeSigning"
	case x509.ExtKeyUsageEmailProtection:
		return "emailProtection"
	case x509.ExtKeyUsageTimeStamping:
		return "timeStamping"
	case x509.ExtKeyUsageOCSPSigning:
		return "OCSPSigning"
	}
	return fmt.Sprintf("extKeyUsage(%d)", int(u))
}
