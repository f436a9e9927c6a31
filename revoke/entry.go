package revoke

import (
	"math/big"
	"time"
)

// Entry is one revoked certificate: its serial number, when it was revoked,
// and why. A zero Reason (Unspecified) is written without a reason code
// extension, as RFC 5280 section 5.3.1 asks.
type Entry struct {
	Serial    *big.Int
	RevokedAt time.Time
	Reason    Reason
}
