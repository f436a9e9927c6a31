package ca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var enrollStart = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// newEnrollCA is a CA whose clock the test moves.
func newEnrollCA(t *testing.T) (*CA, crypto.Signer) {
	t.Helper()
	c, signer := newTestCA(t, InitOptions{Now: fixedClock(enrollStart)})
	c.Now = fixedClock(enrollStart)
	return c, signer
}

func TestCreateEnrollmentStoresOnlyHashes(t *testing.T) {
	c, _ := newEnrollCA(t)
	got, err := c.CreateEnrollment("simon", EnrollIdentity{Emails: []string{"simon@example.com"}}, DefaultEnrollmentLifetime)
	if err != nil {
		t.Fatalf("CreateEnrollment() error = %v", err)
	}
	if !ValidToken(got.Token) {
		t.Errorf("token %q is not 43 base64url characters", got.Token)
	}
	e := got.Enrollment
	if e.ID != EnrollmentID(got.Token) || e.Status != EnrollPending || !e.ExpiresAt.Equal(enrollStart.Add(24*time.Hour)) {
		t.Errorf("enrollment = %+v; want ID of the token, pending, expiring in 24h", e)
	}
	file := filepath.Join(c.Dir().Path(), "db", "enroll", e.ID+".json")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), got.Token) {
		t.Errorf("%s holds the token itself:\n%s", file, data)
	}
	if info, _ := os.Stat(file); info.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %04o; want 0600", file, info.Mode().Perm())
	}
	// Two links never share a token.
	other, err := c.CreateEnrollment("bob", EnrollIdentity{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if other.Token == got.Token {
		t.Error("two enrollments got the same token")
	}
	// The enrollment files are not issuance records.
	for rec, err := range c.Records() {
		t.Errorf("Records() yielded %v, %v; want nothing", rec, err)
	}
}

func TestCreateEnrollmentRejectsBadInput(t *testing.T) {
	c, signer := newEnrollCA(t)
	if _, err := c.Issue(signer, Request{Name: "taken", Profile: Client}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateEnrollment("pending", EnrollIdentity{}, time.Hour); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		who      string
		id       EnrollIdentity
		lifetime time.Duration
		wantErr  string
	}{
		{name: "bad name", who: "../x", lifetime: time.Hour, wantErr: `invalid name "../x"`},
		{name: "bad email", who: "a", id: EnrollIdentity{Emails: []string{"nope"}}, lifetime: time.Hour, wantErr: `invalid email "nope"`},
		{name: "bad uri", who: "a", id: EnrollIdentity{URIs: []string{"::"}}, lifetime: time.Hour, wantErr: "URI"},
		{name: "control in cn", who: "a", id: EnrollIdentity{CommonName: "a\x00b"}, lifetime: time.Hour, wantErr: "invalid common name"},
		{name: "zero lifetime", who: "a", lifetime: 0, wantErr: "invalid enrollment lifetime 0s"},
		{name: "above maximum", who: "a", lifetime: 31 * 24 * time.Hour, wantErr: "at most 30d"},
		{name: "ed25519", who: "a", id: EnrollIdentity{KeyType: Ed25519}, lifetime: time.Hour, wantErr: "browsers cannot use Ed25519"},
		{name: "outlives CA", who: "a", id: EnrollIdentity{Validity: Duration(20 * 365 * 24 * time.Hour)}, lifetime: time.Hour, wantErr: "would outlive the CA"},
		{name: "name taken", who: "taken", lifetime: time.Hour, wantErr: `a certificate named "taken" already exists`},
		{name: "second pending link", who: "pending", lifetime: time.Hour, wantErr: "already has a pending enrollment: \"pending\" has an enrollment link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := countEnrollments(t, c)
			_, err := c.CreateEnrollment(tt.who, tt.id, tt.lifetime)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CreateEnrollment() error = %v; want containing %q", err, tt.wantErr)
			}
			if n := countEnrollments(t, c); n != before {
				t.Errorf("%d enrollments after the error; want %d (nothing written)", n, before)
			}
		})
	}
	// --force lets a name that has a valid certificate enroll.
	if _, err := c.CreateEnrollment("taken", EnrollIdentity{Force: true}, time.Hour); err != nil {
		t.Errorf("CreateEnrollment(taken, Force) error = %v", err)
	}
}

func countEnrollments(t *testing.T, c *CA) int {
	t.Helper()
	n := 0
	for _, err := range c.Enrollments() {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestEnrollIssuesOnceAndRecords(t *testing.T) {
	c, signer := newEnrollCA(t)
	got, err := c.CreateEnrollment("simon", EnrollIdentity{Emails: []string{"simon@example.com"}, OrganizationalUnit: []string{"Ops"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	key := newKey(t)
	issued, e, err := c.Enroll(signer, got.Token, "192.0.2.7", key.Public())
	if err != nil {
		t.Fatalf("Enroll() error = %v", err)
	}
	if issued.Key != nil || issued.KeyFile != "" || issued.Record.HasKey {
		t.Errorf("Enroll stored a key: %+v", issued)
	}
	if issued.Cert.Subject.CommonName != "simon" || issued.Cert.EmailAddresses[0] != "simon@example.com" || issued.Cert.Subject.OrganizationalUnit[0] != "Ops" {
		t.Errorf("certificate subject %v, emails %v; want CN simon, OU Ops, simon@example.com", issued.Cert.Subject, issued.Cert.EmailAddresses)
	}
	if !key.PublicKey.Equal(issued.Cert.PublicKey) {
		t.Error("the certificate does not certify the key given")
	}
	if e.Status != EnrollUsed || e.UsedFrom != "192.0.2.7" || !e.UsedAt.Equal(enrollStart) || e.Serial != issued.Record.Serial {
		t.Errorf("enrollment after use = %+v", e)
	}
	serial, _ := ParseSerial(issued.Record.Serial)
	rec, err := c.Record(serial)
	if err != nil || rec.Status != StatusValid || rec.Name != "simon" {
		t.Errorf("Record() = %+v, %v; want a valid record for simon", rec, err)
	}
	// The second use is refused, and says when and from where the first was.
	_, _, err = c.Enroll(signer, got.Token, "198.51.100.1", newKey(t).Public())
	var spent *EnrollmentSpentError
	if !errors.As(err, &spent) || spent.Status != EnrollUsed || spent.Enrollment.UsedFrom != "192.0.2.7" {
		t.Fatalf("second Enroll() error = %v; want used, from 192.0.2.7", err)
	}
	if recs, _ := c.RecordsByName("simon"); len(recs) != 1 {
		t.Errorf("%d records for simon; want 1", len(recs))
	}
}

func TestEnrollRefusesSpentAndForeignTokens(t *testing.T) {
	c, signer := newEnrollCA(t)
	mk := func(name string, life time.Duration) *NewEnrollment {
		t.Helper()
		got, err := c.CreateEnrollment(name, EnrollIdentity{}, life)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	expired, cancelled, alice, bob := mk("expired", time.Minute), mk("cancelled", time.Hour), mk("alice", time.Hour), mk("bob", time.Hour)
	if _, err := c.CancelEnrollment(KindLink, "cancelled"); err != nil {
		t.Fatal(err)
	}
	c.Now = func() time.Time { return enrollStart.Add(2 * time.Minute) }

	// Bob's file relabelled with Alice's name (or Alice's token tried on
	// Bob's file) does not open: the stored hash binds the token to its name.
	bobFile := filepath.Join(c.Dir().Path(), "db", "enroll", bob.Enrollment.ID+".json")
	data, _ := os.ReadFile(bobFile)
	os.WriteFile(bobFile, []byte(strings.Replace(string(data), `"name":"bob"`, `"name":"alice"`, 1)), 0o600)

	tests := []struct {
		name, token string
		want        EnrollmentStatus // "" for ErrEnrollmentUnknown
	}{
		{name: "expired", token: expired.Token, want: EnrollExpired},
		{name: "cancelled", token: cancelled.Token, want: EnrollCancelled},
		{name: "unknown", token: strings.Repeat("A", 43)},
		{name: "malformed", token: "../../ca.key"},
		{name: "one character off", token: flipFirst(alice.Token)},
		{name: "renamed file", token: bob.Token},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := c.Enroll(signer, tt.token, "192.0.2.1", newKey(t).Public())
			var spent *EnrollmentSpentError
			switch {
			case tt.want == "" && !errors.Is(err, ErrEnrollmentUnknown):
				t.Errorf("Enroll() error = %v; want ErrEnrollmentUnknown", err)
			case tt.want != "" && (!errors.As(err, &spent) || spent.Status != tt.want):
				t.Errorf("Enroll() error = %v; want status %s", err, tt.want)
			}
		})
	}
	for rec := range c.Records() {
		t.Errorf("a refused token issued %s for %s", rec.Serial, rec.Name)
	}
}

func TestEnrollFailureBurnsToken(t *testing.T) {
	c, signer := newEnrollCA(t)
	got, err := c.CreateEnrollment("simon", EnrollIdentity{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Between the link and its use, simon got a certificate by other means.
	if _, err := c.Issue(signer, Request{Name: "simon", Profile: Client}); err != nil {
		t.Fatal(err)
	}
	_, e, err := c.Enroll(signer, got.Token, "192.0.2.7", newKey(t).Public())
	if !errors.Is(err, ErrNameTaken) || e == nil || e.Status != EnrollFailed || !strings.Contains(e.Error, "already exists") {
		t.Fatalf("Enroll() = %+v, %v; want a failed enrollment naming the taken name", e, err)
	}
	// Fail closed: the link stays spent.
	if _, _, err := c.Enroll(signer, got.Token, "192.0.2.7", newKey(t).Public()); !errors.Is(err, ErrEnrollmentSpent) {
		t.Errorf("Enroll() after a failure error = %v; want ErrEnrollmentSpent", err)
	}
}

func TestCancelEnrollment(t *testing.T) {
	c, _ := newEnrollCA(t)
	a, _ := c.CreateEnrollment("alice", EnrollIdentity{}, time.Hour)
	if _, err := c.CreateEnrollment("bob", EnrollIdentity{}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if e, err := c.CancelEnrollment(KindLink, a.Enrollment.ID); err != nil || e.Name != "alice" || e.Status != EnrollCancelled {
		t.Errorf("CancelEnrollment(ID) = %+v, %v", e, err)
	}
	if e, err := c.CancelEnrollment(KindLink, "bob"); err != nil || e.Status != EnrollCancelled {
		t.Errorf("CancelEnrollment(name) = %+v, %v", e, err)
	}
	tests := []struct{ ref, wantErr string }{
		{ref: "alice", wantErr: "is cancelled"},
		{ref: "carol", wantErr: `no such enrollment for "carol"`},
		{ref: "../x", wantErr: "neither an enrollment ID nor a name"},
	}
	for _, tt := range tests {
		if _, err := c.CancelEnrollment(KindLink, tt.ref); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("CancelEnrollment(%q) error = %v; want containing %q", tt.ref, err, tt.wantErr)
		}
	}
	// A cancelled link no longer blocks a new one.
	if _, err := c.CreateEnrollment("alice", EnrollIdentity{}, time.Hour); err != nil {
		t.Errorf("CreateEnrollment after cancel error = %v", err)
	}
}

func TestValidateEnrollURL(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"https://pki.example.com", true},
		{"https://pki.example.com:8443/", true},
		{"http://127.0.0.1:8080", true},
		{"http://pki.example.com", false},
		{"https://pki.example.com/enroll", false},
		{"https://pki.example.com/?a=b", false},
		{"https://user@pki.example.com", false},
		{"ftp://pki.example.com", false},
		{"pki.example.com", false},
	}
	for _, tt := range tests {
		if err := ValidateEnrollURL(tt.in); (err == nil) != tt.ok {
			t.Errorf("ValidateEnrollURL(%q) error = %v; want ok %v", tt.in, err, tt.ok)
		}
	}
}

// flipFirst changes the first character of a token.
func flipFirst(token string) string {
	if token[0] == 'A' {
		return "B" + token[1:]
	}
	return "A" + token[1:]
}

// A link file that a power loss tore (its token never shown) reads as
// corrupt: it blocks no new link for its name, and listing goes on past it.
func TestTornEnrollmentFile(t *testing.T) {
	c, _ := newEnrollCA(t)
	got, err := c.CreateEnrollment("simon", EnrollIdentity{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateEnrollment("bob", EnrollIdentity{}, time.Hour); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(c.Dir().Path(), "db", "enroll", got.Enrollment.ID+".json")
	if err := os.WriteFile(file, []byte(`{"version":1,"id":"`), 0o600); err != nil {
		t.Fatal(err)
	}
	var corrupt, good int
	for e, err := range c.Enrollments() {
		switch {
		case errors.Is(err, ErrCorruptEnrollment):
			corrupt++
		case err == nil && e.Name == "bob":
			good++
		default:
			t.Errorf("Enrollments() yielded %v, %v", e, err)
		}
	}
	if corrupt != 1 || good != 1 {
		t.Errorf("Enrollments() gave %d corrupt and %d good; want 1 and 1", corrupt, good)
	}
	if _, err := c.LookupEnrollment(got.Token); !errors.Is(err, ErrCorruptEnrollment) {
		t.Errorf("LookupEnrollment() of the torn link error = %v; want ErrCorruptEnrollment", err)
	}
	if _, err := c.CreateEnrollment("simon", EnrollIdentity{}, time.Hour); err != nil {
		t.Errorf("CreateEnrollment() after a torn link error = %v", err)
	}
}

// burnChecker is the CA key, checking at each signature that the link's
// file on disk is already used: the token is burnt before anything is
// signed, so a crash during the issuance cannot leave a reusable link.
type burnChecker struct {
	crypto.Signer
	t    *testing.T
	file string
	sigs int
}

func (b *burnChecker) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	b.sigs++
	data, err := os.ReadFile(b.file)
	if err != nil || !strings.Contains(string(data), `"status":"used"`) {
		b.t.Errorf("signing while the link's file says %s (%v); want it burnt first", data, err)
	}
	return b.Signer.Sign(r, digest, opts)
}

func TestEnrollBurnsBeforeSigning(t *testing.T) {
	c, signer := newEnrollCA(t)
	got, err := c.CreateEnrollment("simon", EnrollIdentity{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b := &burnChecker{Signer: signer, t: t, file: filepath.Join(c.Dir().Path(), "db", "enroll", got.Enrollment.ID+".json")}
	if _, _, err := c.Enroll(b, got.Token, "192.0.2.7", newKey(t).Public()); err != nil {
		t.Fatal(err)
	}
	if b.sigs != 1 {
		t.Errorf("%d signatures; want 1", b.sigs)
	}
}
