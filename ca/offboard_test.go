package ca

import (
	"errors"
	"testing"
	"time"
)

// TestOffboardEmail cancels the person's pending link and token (the
// address in another case), leaves another person's link and an expired
// one alone, and ends the person's sign-in sessions but not another's.
func TestOffboardEmail(t *testing.T) {
	c, _ := newEnrollCA(t)
	link, err := c.CreateEnrollment("simon-laptop", EnrollIdentity{Emails: []string{"Simon@Example.com"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	token, err := c.CreateToken("simon-box", EnrollIdentity{Profile: Client, Emails: []string{"simon@example.com"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.CreateEnrollment("bob", EnrollIdentity{Emails: []string{"bob@example.com"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := c.CreateEnrollment("simon-old", EnrollIdentity{Emails: []string{"simon@example.com"}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	mine, err := c.CreateSigninSession(&SigninSession{Email: "simon@example.com", Expires: enrollStart.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := c.CreateSigninSession(&SigninSession{Email: "bob@example.com", Expires: enrollStart.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	c.Now = fixedClock(enrollStart.Add(2 * time.Minute))

	off, err := c.OffboardEmail("simon@example.com")
	if err != nil {
		t.Fatal(err)
	}
	var cancelled []string
	for _, e := range off.Cancelled {
		cancelled = append(cancelled, e.Name)
	}
	if len(cancelled) != 2 || off.Sessions != 1 {
		t.Fatalf("OffboardEmail() cancelled %v and ended %d sessions; want simon-laptop and simon-box, and 1", cancelled, off.Sessions)
	}
	for _, tc := range []struct {
		made *NewEnrollment
		want EnrollmentStatus
	}{{link, EnrollCancelled}, {token, EnrollCancelled}, {other, EnrollPending}, {stale, EnrollExpired}} {
		e, err := c.readEnrollment(tc.made.Enrollment.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.StatusAt(c.Now()); got != tc.want {
			t.Errorf("%s is %s after offboarding; want %s", e.Name, got, tc.want)
		}
	}
	if _, err := c.SigninSession(mine); !errors.Is(err, ErrSigninUnknown) {
		t.Errorf("the person's session survived offboarding: %v", err)
	}
	if _, err := c.SigninSession(theirs); err != nil {
		t.Errorf("another person's session was ended: %v", err)
	}
	if _, err := c.OffboardEmail("not an address"); err == nil {
		t.Error("OffboardEmail(invalid address) = nil error")
	}
}
