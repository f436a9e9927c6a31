package revoke

import "errors"

// Sentinel errors returned by ParseCRL and the CRL methods, wrapped with
// details; test for them with errors.Is.
var (
	// ErrMalformed means the bytes are not a well-formed X.509 v2 CRL that
	// this package understands (corrupt, truncated, or using an unsupported
	// critical extension).
	ErrMalformed = errors.New("revoke: malformed CRL")
	// ErrIncomplete means a well-formed, correctly signed CRL does not list
	// every revoked client certificate of its issuer, so it cannot stand in
	// for the complete CRL: a delta CRL (RFC 5280 section 5.2.4), or one
	// whose issuing distribution point (section 5.2.5) limits it to CA or
	// attribute certificates or to some reasons, or makes it indirect.
	ErrIncomplete = errors.New("revoke: not a complete CRL for client certificates")
	// ErrWrongIssuer means the CRL names another issuer or carries another
	// authority key identifier than the CA certificate it was checked with.
	ErrWrongIssuer = errors.New("revoke: CRL issued by another CA")
	// ErrBadSignature means the CRL's signature does not verify with the
	// CA's public key, or uses an algorithm this package does not accept.
	ErrBadSignature = errors.New("revoke: CRL signature does not verify")
	// ErrExpired means the CRL's nextUpdate is in the past.
	ErrExpired = errors.New("revoke: CRL expired")
	// ErrNotYetValid means the CRL's thisUpdate is in the future.
	ErrNotYetValid = errors.New("revoke: CRL not yet valid")
	// ErrLowerNumber means a CRL's number is lower than the number of the
	// CRL it should replace (see MayReplace).
	ErrLowerNumber = errors.New("revoke: CRL number not greater than the previous one")
	// ErrUnverified means no CA of the bundle given to ParseCRLFile
	// verifies a CRL of the file; the refusal of each is wrapped with it.
	ErrUnverified = errors.New("revoke: no CA of the bundle accepts the CRL")
	// ErrNotDelta means a CRL given as a delta CRL is a complete one.
	ErrNotDelta = errors.New("revoke: not a delta CRL")
	// ErrDeltaMismatch means a delta CRL cannot be applied to a complete
	// CRL (see WithDelta): another CA's, against a later base, or not
	// newer than the complete CRL.
	ErrDeltaMismatch = errors.New("revoke: delta CRL does not apply to the complete CRL")
	// ErrTwoCRLs means a CRL file holds two CRLs of one CA.
	ErrTwoCRLs = errors.New("revoke: two CRLs of one CA")
)

// IssuerError is the refusal of a CRL signed by another CA than the one it
// was checked against: another issuer name, or the same name with another
// key's authority key identifier. It matches ErrWrongIssuer.
type IssuerError struct {
	// CRLIssuer is the issuer name the CRL carries and CA the subject of
	// the CA certificate it was checked with (RFC 4514-like strings).
	CRLIssuer, CA string
	// OtherKey is set when the names agree and the key identifiers do
	// not: a CA made again under the same name.
	OtherKey bool
	// detail says what differs.
	detail string
}

func (e *IssuerError) Error() string { return ErrWrongIssuer.Error() + ": " + e.detail }

// Unwrap returns ErrWrongIssuer.
func (e *IssuerError) Unwrap() error { return ErrWrongIssuer }
