package revoke

import (
	"crypto/x509"
	"errors"
	"math/big"
	"time"
)

// PathOptions are the inputs of VerifyPath besides the certificate.
type PathOptions struct {
	// Chain is the CA chain above the certificate: its issuing CA first,
	// the trust anchor (a self-signed root) last.
	Chain []*x509.Certificate
	// CRLs are the current CRLs of the CAs of Chain below none: one per
	// CA, each parsed by ParseCRL against its issuer. A CA without one
	// refuses every certificate under it.
	CRLs []*CRL
	// Purpose, At, Grace and Logged are those of VerifyOptions.
	Purpose x509.ExtKeyUsage
	At      time.Time
	Grace   time.Duration
	Logged  func(serial *big.Int) (*Entry, error)
}

// VerifyPath is VerifyCertificate over a chain of several CAs: it checks
// that each certificate of cert, opts.Chain... is signed by the next and
// valid at opts.At, and that crypto/x509 accepts the path (name
// constraints, path lengths), and hands that verdict with the CRLs to
// [JudgePath], which judges cert with the CRL of its issuer and each CA
// below the anchor with the CRL of the CA above it.
func VerifyPath(cert *x509.Certificate, opts PathOptions) error {
	if cert == nil || len(opts.Chain) == 0 {
		return errors.New("verifying certificate: certificate and chain are required")
	}
	path := append([]*x509.Certificate{cert}, opts.Chain...)
	f := Facts{Cert: cert, Purpose: opts.Purpose, Grace: opts.Grace, At: opts.At, Logged: opts.Logged}
	for i := 0; i+1 < len(path) && f.Chain == nil; i++ {
		f.Chain = checkChain(path[i], path[i+1], opts.At)
	}
	if f.Chain == nil {
		f.Chain = checkValidity("certificate", cert, opts.At)
	}
	if f.Chain == nil {
		roots, inter := x509.NewCertPool(), x509.NewCertPool()
		roots.AddCert(path[len(path)-1])
		for _, ca := range opts.Chain[:len(opts.Chain)-1] {
			inter.AddCert(ca)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: opts.At,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			f.Chain = ChainError(err, cert, opts.At)
		}
	}
	crls := make([]IssuedCRL, 0, len(opts.CRLs))
	for _, crl := range opts.CRLs {
		if crl != nil {
			crls = append(crls, IssuedCRL{CRL: crl, Issuer: crl.issuer})
		}
	}
	return JudgePath(f, path, crls)
}
