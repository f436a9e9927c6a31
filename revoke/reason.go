package revoke

import (
	"fmt"
	"strings"
)

// Reason is an RFC 5280 section 5.3.1 CRLReason code.
type Reason int

// The CRLReason codes of RFC 5280 section 5.3.1. Code 7 is not used.
const (
	Unspecified          Reason = 0
	KeyCompromise        Reason = 1
	CACompromise         Reason = 2
	AffiliationChanged   Reason = 3
	Superseded           Reason = 4
	CessationOfOperation Reason = 5
	CertificateHold      Reason = 6
	RemoveFromCRL        Reason = 8
	PrivilegeWithdrawn   Reason = 9
	AACompromise         Reason = 10
)

var reasonNames = [...]string{
	Unspecified:          "unspecified",
	KeyCompromise:        "keyCompromise",
	CACompromise:         "cACompromise",
	AffiliationChanged:   "affiliationChanged",
	Superseded:           "superseded",
	CessationOfOperation: "cessationOfOperation",
	CertificateHold:      "certificateHold",
	RemoveFromCRL:        "removeFromCRL",
	PrivilegeWithdrawn:   "privilegeWithdrawn",
	AACompromise:         "aACompromise",
}

// Valid reports whether r is one of the codes RFC 5280 defines.
func (r Reason) Valid() bool {
	return r >= 0 && int(r) < len(reasonNames) && reasonNames[r] != ""
}

// String returns the RFC 5280 name of r, such as "keyCompromise", or
// "reason(7)" for a code RFC 5280 does not define.
func (r Reason) String() string {
	if !r.Valid() {
		return fmt.Sprintf("reason(%d)", int(r))
	}
	return reasonNames[r]
}

// ParseReason returns the Reason whose RFC 5280 name is s, ignoring case.
// The error names s and lists the valid names.
func ParseReason(s string) (Reason, error) {
	for r, name := range reasonNames {
		if name != "" && strings.EqualFold(name, s) {
			return Reason(r), nil
		}
	}
	return 0, fmt.Errorf("unknown revocation reason %q (valid: %s)", s, strings.Join(ReasonNames(), ", "))
}

// ReasonNames returns the RFC 5280 names of all reason codes in code order.
func ReasonNames() []string {
	names := make([]string, 0, len(reasonNames))
	for _, name := range reasonNames {
		if name != "" {
			names = append(names, name)
		}
	}
	return names
}
