package revoke

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"
)

// VerifyReason names why a certificate is refused, by [Judge] and so by
// VerifyCertificate, `minica verify` and the proxy. The values are stable,
// lowercase and short, fit for log fields and metric labels; the proxy's
// metrics and logs use them unchanged.
type VerifyReason string

// The reasons Judge and ChainError report.
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
	// ReasonNoCRLForIssuer refuses a certificate of a trusted CA other
	// than the one whose CRL is in use: it could not be revoked.
	ReasonNoCRLForIssuer VerifyReason = "no-crl-for-issuer"
	// ReasonBadChain refuses a certificate whose chain fails for a reason
	// none of the others names.
	ReasonBadChain VerifyReason = "bad-chain"
)

// VerifyError is the error Judge and VerifyCertificate return when they
// refuse a certificate.
type VerifyError struct {
	// Reason classifies the failure.
	Reason VerifyReason
	// Detail is a human-readable sentence naming the dates, usages or
	// revocation involved.
	Detail string
	// Revocation is the CRL or log entry when Reason is ReasonRevoked, else
	// nil.
	Revocation *Entry
	// Unpublished is set when Reason is ReasonRevoked because of
	// Facts.Logged while the CRL does not list the certificate.
	Unpublished bool
	// Err is the underlying error, if any (for example ErrExpired).
	Err error
}

// Error returns the reason followed by the detail.
func (e *VerifyError) Error() string {
	return string(e.Reason) + ": " + e.Detail
}

// Unwrap returns the underlying error.
func (e *VerifyError) Unwrap() error { return e.Err }

// Revocations is what Judge needs of a CRL whose signature has been checked
// against its issuer: *CRL is one, and so is what the proxy's CRL parser
// returns. When it also has the method Lookup(*big.Int) (Entry, bool), as
// *CRL does, a revoked verdict names the revocation time and reason.
type Revocations interface {
	Number() *big.Int
	ThisUpdate() time.Time
	NextUpdate() time.Time
	IsRevoked(serial *big.Int) bool
}

// Facts are everything Judge decides on: the certificate, what is already
// known of its chain, the trusted CAs, the CRL in use, the time, and what
// the issuer's own revocation log says. Callers gather them (the proxy from
// the TLS handshake and its loaded state, `minica verify` from the CA
// directory); Judge never reads anything itself.
type Facts struct {
	// Cert is the certificate judged.
	Cert *x509.Certificate
	// Chain is the verdict on Cert's chain and validity period, reached
	// before (by Go's verifier and ChainError, or by VerifyCertificate):
	// nil when Cert chains to Issuer and the chain is valid at At, else the
	// refusal, a *VerifyError.
	Chain error
	// Issuer is the CA that signed Cert on its verified chain, nil if
	// none (a self-signed certificate of the bundle, or Chain failed).
	Issuer *x509.Certificate
	// CAs are the trusted CAs (the bundle). A CRL whose issuer is none of
	// them is no CRL.
	CAs []*x509.Certificate
	// CRL is the CRL in use, verified against CRLIssuer; nil if there is
	// none. No CRL never means nothing is revoked.
	CRL Revocations
	// CRLIssuer is the CA whose signature on CRL verified.
	CRLIssuer *x509.Certificate
	// Purpose is the extended key usage required, such as
	// x509.ExtKeyUsageClientAuth; never x509.ExtKeyUsageAny.
	Purpose x509.ExtKeyUsage
	// Grace is how long past its nextUpdate the CRL is still relied on
	// (see Freshness); 0 means not at all.
	Grace time.Duration
	// Skew is how far before the CRL's thisUpdate At may be, for clocks
	// that disagree a little; 0 means not at all.
	Skew time.Duration
	// At is the time of the judgement.
	At time.Time
	// SkipRevocation, when set, leaves the CRL out of the judgement (steps
	// 1, 5 and 6 below): only for a caller the user told, in so many words,
	// that no CRL is to be checked (`minica verify --no-crl`), which must
	// then say that revocation was not checked.
	SkipRevocation bool
	// Logged, if not nil, looks a serial up in the issuer's revocation log
	// and returns its entry, or nil when the log does not hold it revoked.
	// It is asked only about a certificate signed by Issuer whose other
	// checks pass (or that only the CRL keeps from being judged), so that a
	// revocation the CRL does not list yet still counts.
	Logged func(serial *big.Int) (*Entry, error)
}

// Judge is the one judge of a certificate, for `minica verify`
// (VerifyCertificate) and the proxy (each handshake, and each request of
// a connection after a reload). It checks, in this order, and returns the
// first refusal as a *VerifyError:
//
//  1. the CRL: present and issued by a CA of CAs (else ReasonCRLMissing),
//     not before its thisUpdate less Skew (ReasonCRLNotYetValid) and not
//     past its nextUpdate plus Grace (ReasonCRLExpired), by [Freshness];
//     while the CRL fails here, a certificate signed by Issuer that Logged
//     holds revoked is ReasonRevoked instead;
//  2. Chain, as given (unknown CA, validity of the chain);
//  3. Cert is not a CA: basicConstraints CA:TRUE, or keyCertSign in its key
//     usage, is ReasonCACertificate;
//  4. Cert has an extended key usage extension (ReasonNoEKU) that lists
//     Purpose (ReasonWrongEKU); anyExtendedKeyUsage does not count;
//  5. Issuer is the CRL's issuer (ReasonNoCRLForIssuer);
//  6. the CRL does not list Cert's serial, and Logged does not hold it
//     revoked (ReasonRevoked, with Unpublished set in the second case).
//
// It returns nil for a certificate that passes every check, and a plain
// error for missing inputs or a failure of Logged.
func Judge(f Facts) error {
	if f.Cert == nil {
		return errors.New("judging certificate: a certificate is required")
	}
	if f.Purpose == x509.ExtKeyUsageAny {
		return errors.New("judging certificate: a specific purpose is required")
	}
	if f.SkipRevocation {
		if f.Chain != nil {
			return f.Chain
		}
		return checkLeaf(f)
	}
	if err := checkCRL(f); err != nil {
		if f.Logged == nil || f.Issuer == nil || f.Cert.CheckSignatureFrom(f.Issuer) != nil {
			return err
		}
		logged, lerr := loggedRevocation(f)
		switch {
		case lerr != nil:
			return lerr
		case logged != nil:
			return logged
		}
		return err
	}
	if f.Chain != nil {
		return f.Chain
	}
	if err := checkLeaf(f); err != nil {
		return err
	}
	if f.Issuer == nil || !f.Issuer.Equal(f.CRLIssuer) {
		return &VerifyError{Reason: ReasonNoCRLForIssuer,
			Detail: fmt.Sprintf("issued by %q, whose CRL is not the one in use (of %q)", f.Cert.Issuer, f.CRLIssuer.Subject)}
	}
	if lk, ok := f.CRL.(interface {
		Lookup(*big.Int) (Entry, bool)
	}); ok {
		if e, revoked := lk.Lookup(f.Cert.SerialNumber); revoked {
			return &VerifyError{Reason: ReasonRevoked, Revocation: &e,
				Detail: fmt.Sprintf("serial %x revoked at %s (%s)", f.Cert.SerialNumber, rfc3339(e.RevokedAt), e.Reason)}
		}
	} else if f.CRL.IsRevoked(f.Cert.SerialNumber) {
		return &VerifyError{Reason: ReasonRevoked, Detail: fmt.Sprintf("serial %x is on the CRL", f.Cert.SerialNumber)}
	}
	logged, err := loggedRevocation(f)
	if err != nil {
		return err
	}
	if logged != nil {
		return logged
	}
	return nil
}

// checkLeaf is steps 3 and 4 of Judge: not a CA, and the EKU required.
func checkLeaf(f Facts) error {
	if f.Cert.BasicConstraintsValid && f.Cert.IsCA {
		return &VerifyError{Reason: ReasonCACertificate,
			Detail: "the certificate is a CA (basicConstraints CA:TRUE), not a client or server certificate"}
	}
	if f.Cert.KeyUsage&x509.KeyUsageCertSign != 0 {
		// RFC 5280 4.2.1.9: keyCertSign without CA:TRUE is malformed;
		// whatever it claims, it is no client or server certificate.
		return &VerifyError{Reason: ReasonCACertificate,
			Detail: "the certificate's key usage has keyCertSign, as a CA's, not a client or server certificate"}
	}
	return checkEKU(f.Cert, f.Purpose)
}

// loggedRevocation asks f.Logged about f.Cert: a revoked verdict, or nil.
func loggedRevocation(f Facts) (*VerifyError, error) {
	if f.Logged == nil {
		return nil, nil
	}
	e, err := f.Logged(f.Cert.SerialNumber)
	if err != nil || e == nil {
		return nil, err
	}
	ve := &VerifyError{Reason: ReasonRevoked, Revocation: e,
		Detail: fmt.Sprintf("serial %x revoked at %s (%s)", f.Cert.SerialNumber, rfc3339(e.RevokedAt), e.Reason)}
	if f.CRL == nil || !f.CRL.IsRevoked(f.Cert.SerialNumber) {
		ve.Unpublished = true
		ve.Detail += "; the published CRL does not list it yet"
	}
	return ve, nil
}

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
	// Grace is how long past its nextUpdate the CRL is still relied on,
	// like the proxy's CRLGrace; 0 means not at all.
	Grace time.Duration
	// Logged is Facts.Logged: the issuer's revocation log, or nil.
	Logged func(serial *big.Int) (*Entry, error)
}

// VerifyCertificate judges cert against one issuing CA the way the proxy
// does: it checks that cert is signed by opts.Issuer, which must itself be
// valid at opts.At, and that cert is valid at opts.At, and hands that
// verdict with the other facts to [Judge], whose order decides: the CRL
// first, then the chain, CA:TRUE, extended key usage and revocation.
// Refusals are *VerifyError values.
func VerifyCertificate(cert *x509.Certificate, opts VerifyOptions) error {
	if cert == nil || opts.Issuer == nil {
		return errors.New("verifying certificate: certificate and issuer are required")
	}
	if opts.Purpose == x509.ExtKeyUsageAny {
		return errors.New("verifying certificate: a specific purpose is required")
	}
	f := Facts{Cert: cert, Issuer: opts.Issuer, CAs: []*x509.Certificate{opts.Issuer},
		Purpose: opts.Purpose, Grace: opts.Grace, At: opts.At, Logged: opts.Logged}
	if opts.CRL != nil {
		f.CRL, f.CRLIssuer = opts.CRL, opts.CRL.issuer
	}
	f.Chain = checkChain(cert, opts.Issuer, opts.At)
	if f.Chain == nil {
		f.Chain = checkValidity("certificate", cert, opts.At)
	}
	return Judge(f)
}

// JudgeCRL is step 1 of Judge alone, for a caller that asks whether the CRL
// can be relied on at all (the proxy, on each request): it reads only CAs,
// CRL, CRLIssuer, Grace, Skew and At, and returns the refusal Judge would
// give every certificate, or nil.
func JudgeCRL(f Facts) error {
	return checkCRL(f)
}

// checkCRL is step 1 of Judge.
func checkCRL(f Facts) error {
	crl := f.CRL
	if crl == nil {
		return &VerifyError{Reason: ReasonCRLMissing, Detail: "no CRL for the issuing CA"}
	}
	if f.CRLIssuer == nil || !slices.ContainsFunc(f.CAs, f.CRLIssuer.Equal) {
		d := "the CRL was not checked against a trusted CA"
		switch {
		case f.CRLIssuer != nil && len(f.CAs) == 1:
			d = fmt.Sprintf("the CRL was checked against %q, not the issuing CA %q", f.CRLIssuer.Subject, f.CAs[0].Subject)
		case f.CRLIssuer != nil:
			d = fmt.Sprintf("the CRL was checked against %q, not a CA of the bundle", f.CRLIssuer.Subject)
		}
		return &VerifyError{Reason: ReasonCRLMissing, Err: ErrWrongIssuer, Detail: d}
	}
	switch Freshness(crl.ThisUpdate().Add(-f.Skew), crl.NextUpdate(), Thresholds{Grace: f.Grace}, f.At) {
	case Expired:
		return &VerifyError{Reason: ReasonCRLExpired,
			Err:    fmt.Errorf("%w: next update %s is before %s", ErrExpired, rfc3339(crl.NextUpdate()), rfc3339(f.At)),
			Detail: fmt.Sprintf("CRL %s expired at %s", crl.Number(), rfc3339(crl.NextUpdate()))}
	case NotYetValid:
		return &VerifyError{Reason: ReasonCRLNotYetValid,
			Err:    fmt.Errorf("%w: this update %s is after %s", ErrNotYetValid, rfc3339(crl.ThisUpdate()), rfc3339(f.At)),
			Detail: fmt.Sprintf("CRL %s is not valid before %s", crl.Number(), rfc3339(crl.ThisUpdate()))}
	}
	return nil
}

// ChainError classifies err, the refusal of cert's chain by crypto/x509's
// Certificate.Verify at the time at, as a *VerifyError: ReasonUnknownCA,
// ReasonExpired or ReasonNotYetValid (of cert, or ReasonExpired for a CA of
// the chain), ReasonWrongEKU, else ReasonBadChain. It gives the proxy's
// handshake refusals the reasons of Judge.
func ChainError(err error, cert *x509.Certificate, at time.Time) *VerifyError {
	ve := &VerifyError{Reason: ReasonBadChain, Err: err, Detail: err.Error()}
	var inv x509.CertificateInvalidError
	switch {
	case errors.As(err, &x509.UnknownAuthorityError{}):
		ve.Reason = ReasonUnknownCA
	case errors.As(err, &inv) && inv.Reason == x509.Expired:
		ve.Reason = ReasonExpired
		if cert != nil && at.Before(cert.NotBefore) {
			ve.Reason = ReasonNotYetValid
		}
	case errors.As(err, &inv) && inv.Reason == x509.IncompatibleUsage:
		ve.Reason = ReasonWrongEKU
	}
	return ve
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
