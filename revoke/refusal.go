package revoke

import "errors"

// Reasons a new CRL is refused, as RefusalReason names them: the label of
// the proxy's log lines and metrics, and the word `minica crl fetch` prints.
const (
	RefusalMalformed    = "malformed"          // not a CRL (garbage, truncated, an HTML page)
	RefusalBadSignature = "bad-signature"      // the signature does not verify
	RefusalWrongIssuer  = "wrong-issuer"       // another CA's CRL
	RefusalIncomplete   = "incomplete"         // a delta or partial CRL
	RefusalDelta        = "delta-mismatch"     // a delta CRL that does not apply to the complete CRL held
	RefusalNotDelta     = "not-delta"          // a complete CRL where a delta CRL was sent
	RefusalOlder        = "older-number"       // a lower number than the one held: a replay
	RefusalFuture       = "future-this-update" // thisUpdate in the future
	RefusalExpired      = "expired"            // past its nextUpdate, while the CRL held is current
	RefusalOther        = "refused"            // any other refusal
)

// refusals pairs each sentinel with its label, in the order RefusalReason
// tries them.
var refusals = []struct {
	err    error
	reason string
}{
	{ErrLowerNumber, RefusalOlder},
	{ErrNotYetValid, RefusalFuture},
	{ErrExpired, RefusalExpired},
	{ErrMalformed, RefusalMalformed},
	{ErrBadSignature, RefusalBadSignature},
	{ErrWrongIssuer, RefusalWrongIssuer},
	{ErrIncomplete, RefusalIncomplete},
	{ErrDeltaMismatch, RefusalDelta},
	{ErrNotDelta, RefusalNotDelta},
}

// RefusalReason names why a CRL was refused, from an error of ParseCRL,
// ParseCRLFile or MayReplace: one of the Refusal constants.
func RefusalReason(err error) string {
	for _, r := range refusals {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return RefusalOther
}
