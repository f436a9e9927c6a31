package revoke_test

import (
	"errors"
	"fmt"
	"testing"

	"minica/revoke"
)

// Every refusal of a CRL by the parser or by MayReplace has its label,
// wrapped or not; anything else is "refused".
func TestRefusalReason(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{revoke.ErrMalformed, revoke.RefusalMalformed},
		{revoke.ErrBadSignature, revoke.RefusalBadSignature},
		{revoke.ErrWrongIssuer, revoke.RefusalWrongIssuer},
		{revoke.ErrIncomplete, revoke.RefusalIncomplete},
		{revoke.ErrLowerNumber, revoke.RefusalOlder},
		{revoke.ErrNotYetValid, revoke.RefusalFuture},
		{revoke.ErrExpired, revoke.RefusalExpired},
		{revoke.ErrDeltaMismatch, revoke.RefusalDelta},
		{revoke.ErrNotDelta, revoke.RefusalNotDelta},
		{fmt.Errorf("CRL 2 of 2: %w", fmt.Errorf("%w: bad", revoke.ErrMalformed)), revoke.RefusalMalformed},
		{errors.New("reading CRL: no such file"), revoke.RefusalOther},
	}
	for _, tt := range tests {
		if got := revoke.RefusalReason(tt.err); got != tt.want {
			t.Errorf("RefusalReason(%v) = %q; want %q", tt.err, got, tt.want)
		}
	}
}
