package formats

import (
	"errors"
	"fmt"
)

// Sentinel errors that callers branch on with errors.Is. Messages built
// around them add the detail (what was found, where).
var (
	// ErrEmpty is returned for input with no bytes, or only whitespace.
	ErrEmpty = errors.New("empty input")

	// ErrTruncated is returned when PEM or DER input ends before the
	// structure it announces.
	ErrTruncated = errors.New("truncated input")

	// ErrUnknownFormat is returned when the input is neither a PEM block nor
	// a DER structure this package knows.
	ErrUnknownFormat = errors.New("unknown format")

	// ErrWrongKind is matched by a *KindError: the input is a valid object,
	// but not the kind the caller asked for.
	ErrWrongKind = errors.New("unexpected kind of object")

	// ErrKeyMismatch is returned when a private key is not the one of a
	// certificate.
	ErrKeyMismatch = errors.New("private key does not match the certificate")
)

// KindError reports that the input holds a Found object where a Want object
// was expected, e.g. a certificate passed where a private key belongs. It
// matches ErrWrongKind.
type KindError struct {
	Want  Kind
	Found string // the plain-words description of what was found
}

// Error implements error.
func (e *KindError) Error() string {
	return fmt.Sprintf("expected %s, found %s", e.Want.withArticle(), e.Found)
}

// Is makes errors.Is(err, ErrWrongKind) true.
func (e *KindError) Is(target error) bool { return target == ErrWrongKind }

// ErrMalformed is returned when the input is recognized (a PEM block of a
// known type, a DER structure of a known shape) but does not parse.
var ErrMalformed = errors.New("malformed input")

// ErrUnsupported is returned for valid input of a variant this package does
// not decode, such as a BER-encoded PKCS#12 bundle.
var ErrUnsupported = errors.New("unsupported input")
