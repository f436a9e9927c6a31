package revoke

import "errors"

// Sentinel errors returned by ParseCRL and the CRL methods, wrapped with
// details; test for them with errors.Is.
var (
	// ErrMalformed means the bytes are not a well-formed X.509 v2 CRL that
	// this package understands (corrupt, truncated, or using an unsupported
	// critical extension such as a delta CRL indicator).
	ErrMalformed = errors.New("revoke: malformed CRL")
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
	// ErrLowerNumber means a CRL's number is not greater than the number of
	// the CRL it should replace.
	ErrLowerNumber = errors.New("revoke: CRL number not greater than the previous one")
)
