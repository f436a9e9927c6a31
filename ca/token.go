package ca

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"time"
)

// EnrollKind tells how an enrollment is redeemed.
type EnrollKind string

// Enrollment kinds.
const (
	// KindLink is a person's one-time link: the enrollment page makes
	// the key and hands out a bundle (serve/enroll).
	KindLink EnrollKind = ""
	// KindToken is a machine's bootstrap token: the machine makes its
	// key and trades the token and a CSR for its first certificate
	// (RedeemToken; serve's /bootstrap, `minica agent --token-file`).
	KindToken EnrollKind = "token"
)

// String names the kind with its article: "an enrollment link", "a
// bootstrap token".
func (k EnrollKind) String() string {
	if k == KindToken {
		return "a bootstrap token"
	}
	return "an enrollment link"
}

// DefaultTokenLifetime is how long a bootstrap token is good for unless
// asked otherwise: long enough to provision a machine, short enough that a
// token left in an image or a ticket is spent or dead by the time anyone
// finds it.
const DefaultTokenLifetime = time.Hour

// ErrTokenCSR marks a CSR that a bootstrap token cannot be traded with
// (see RedeemToken); the token is not spent by it.
var ErrTokenCSR = errors.New("CSR not acceptable for a bootstrap token")

// CreateToken checks the request as Issue would and writes a new pending
// bootstrap token for name, with the identity id (Profile Client or
// Server), valid for lifetime. It is an enrollment of Kind KindToken: a
// name has at most one pending enrollment of either kind, and only hashes
// of the token are stored. The caller must hold the lock (see Lock).
func (c *CA) CreateToken(name string, id EnrollIdentity, lifetime time.Duration) (*NewEnrollment, error) {
	return c.createEnrollment(name, id, lifetime, KindToken)
}

// LookupToken returns the bootstrap token's enrollment, whatever its
// status, as LookupEnrollment does for links: a link's token matches
// nothing here.
func (c *CA) LookupToken(token string) (*Enrollment, error) {
	return c.lookupEnrollment(token, KindToken)
}

// checkTokenCSR tells whether csr may be traded with the bootstrap token
// e: its signature holds, its key is strong enough (CheckPublicKey), it
// does not ask to be a CA, and every name it asks for is one of e's (it
// may name none: the certificate says exactly what the token says,
// whatever the CSR asks). Failures wrap ErrTokenCSR.
func checkTokenCSR(csr *x509.CertificateRequest, e *Enrollment) error {
	if err := csr.CheckSignature(); err != nil {
		return fmt.Errorf("%w: its signature: %v", ErrTokenCSR, err)
	}
	if err := CheckPublicKey(csr.PublicKey); err != nil {
		return fmt.Errorf("%w: %v", ErrTokenCSR, err)
	}
	if slices.Contains(IgnoredCSRExtensions(csr), "basicConstraints (CA:TRUE)") {
		return fmt.Errorf("%w: it asks to be a CA (basicConstraints CA:TRUE)", ErrTokenCSR)
	}
	want, err := e.SANs()
	if err != nil {
		return err
	}
	for _, got := range csrSANList(csr) {
		if !slices.Contains(want, got) {
			return fmt.Errorf("%w: it asks for %s, which the token for %q does not name (it names %s)", ErrTokenCSR, got, e.Name, sanList(want))
		}
	}
	return nil
}

// RedeemToken trades a bootstrap token and a CSR for the token's
// certificate, for the CSR's key. A token that matches no token gives
// ErrEnrollmentUnknown, one that is not pending an *EnrollmentSpentError
// (whatever the CSR). Then the CSR is checked (checkTokenCSR: signature,
// key, no CA:TRUE, only the token's names) and the name must be free (as
// Issue checks it): a refusal of either leaves the token pending. Then, as
// Enroll, the token is burnt durably before anything is signed.
// from is the address it came from, kept in the enrollment. The caller
// must hold the lock.
//
// A used token presented again with a CSR for the key it was used for
// gets the same certificate again, while that certificate is valid and
// unrevoked: the machine lost the answer (a timeout, a restart) and asks
// again with the key it kept. Nothing is issued or written then.
func (c *CA) RedeemToken(signer crypto.Signer, token, from string, csr *x509.CertificateRequest) (*Issued, *Enrollment, error) {
	e, err := c.LookupToken(token)
	if err != nil {
		return nil, nil, err
	}
	now := c.Now().UTC()
	if st := e.StatusAt(now); st != EnrollPending {
		if checkTokenCSR(csr, e) == nil {
			if issued := c.reissued(e, csr.PublicKey); issued != nil {
				return issued, e, nil
			}
		}
		return nil, e, &EnrollmentSpentError{Enrollment: e, Status: st}
	}
	if err := checkTokenCSR(csr, e); err != nil {
		return nil, e, err
	}
	// A name taken since the token was made is refused before the token
	// is spent: the operator frees the name and the same token works.
	if err := c.checkNameFree(e.Name, now, e.Identity.Force); err != nil {
		return nil, e, err
	}
	return c.redeem(signer, e, from, csr.PublicKey)
}

// reissued returns the certificate a used token e gave, when it certifies
// pub and is still valid and unrevoked; else nil.
func (c *CA) reissued(e *Enrollment, pub crypto.PublicKey) *Issued {
	if e.Status != EnrollUsed || e.Serial == "" {
		return nil
	}
	serial, err := ParseSerial(e.Serial)
	if err != nil {
		return nil
	}
	rec, err := c.Record(serial)
	if err != nil || rec.Status != StatusValid || !c.Now().Before(rec.NotAfter) {
		return nil
	}
	cert, err := c.Certificate(rec)
	if err != nil || !samePublicKey(cert.PublicKey, pub) {
		return nil
	}
	return &Issued{Record: rec, Cert: cert}
}
