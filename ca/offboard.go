package ca

import (
	"fmt"
	"slices"
	"strings"
)

// Offboarded is what OffboardEmail did: the pending enrollment links and
// bootstrap tokens it cancelled, and how many sign-in sessions it ended.
type Offboarded struct {
	Cancelled []*Enrollment
	Sessions  int
}

// OffboardEmail stops what a person started and could still finish after
// their certificates are revoked: it cancels every pending enrollment
// (link or token) whose certificate would hold the email address addr, and
// ends every sign-in session of addr, so that neither issues a certificate
// after the revocation. Addresses compare as RecordsByEmail compares them.
// The caller must hold the lock. On an error, what was done before it
// stays done (each cancellation is durable on its own); run it again.
func (c *CA) OffboardEmail(addr string) (*Offboarded, error) {
	if err := ValidateEmail(addr); err != nil {
		return nil, err
	}
	off := &Offboarded{}
	now := c.Now().UTC()
	var pending []*Enrollment
	for e, err := range c.Enrollments() {
		if err != nil {
			return off, fmt.Errorf("reading enrollments: %w", err)
		}
		if e.StatusAt(now) == EnrollPending && slices.ContainsFunc(e.Identity.Emails, func(m string) bool { return strings.EqualFold(m, addr) }) {
			pending = append(pending, e)
		}
	}
	for _, e := range pending {
		done, err := c.CancelEnrollment(e.Kind, e.ID)
		if err != nil {
			return off, err
		}
		off.Cancelled = append(off.Cancelled, done)
	}
	n, err := c.endSigninSessions(func(s *SigninSession) bool { return strings.EqualFold(s.Email, addr) })
	off.Sessions = n
	return off, err
}

// Did reports whether o cancelled or ended anything; a nil o did not.
func (o *Offboarded) Did() bool { return o != nil && (len(o.Cancelled) > 0 || o.Sessions > 0) }
