package ca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"minica/ca/store"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Enrollment lifetimes: a link is valid for DefaultEnrollmentLifetime
// unless asked otherwise, and never longer than MaxEnrollmentLifetime, so
// that a forgotten link in a mailbox stops working.
const (
	DefaultEnrollmentLifetime = 24 * time.Hour
	MaxEnrollmentLifetime     = 30 * 24 * time.Hour
)

// tokenBytes is the size of an enrollment token: 256 bits from the CSPRNG.
const tokenBytes = 32

// EnrollmentStatus is the state of an enrollment. Expired is never stored:
// it is derived from ExpiresAt.
type EnrollmentStatus string

// Enrollment statuses.
const (
	EnrollPending   EnrollmentStatus = "pending"
	EnrollUsed      EnrollmentStatus = "used"
	EnrollCancelled EnrollmentStatus = "cancelled"
	EnrollExpired   EnrollmentStatus = "expired"
	// EnrollFailed: the token was burnt but the issuance failed; the link
	// is spent all the same (fail closed) and Error says why.
	EnrollFailed EnrollmentStatus = "failed"
)

// Errors of the enrollment functions.
var (
	// ErrEnrollmentUnknown: no enrollment has this token (or ID or name).
	ErrEnrollmentUnknown = store.ErrEnrollmentUnknown
	// ErrEnrollmentPending: the name already has a pending enrollment;
	// *EnrollmentPendingError says which.
	ErrEnrollmentPending = errors.New("name already has a pending enrollment")
	// ErrCorruptEnrollment: an enrollment file does not decode (a power
	// loss tore it before its token was ever shown).
	ErrCorruptEnrollment = errors.New("corrupt enrollment")
	// ErrEnrollmentSpent: the enrollment is used, cancelled, failed or
	// expired; EnrollmentSpentError tells which.
	ErrEnrollmentSpent = errors.New("enrollment link can no longer be used")
)

// EnrollmentSpentError is returned for a token whose enrollment is not
// pending; it carries the enrollment, so that a page can say what became of
// it.
type EnrollmentSpentError struct {
	Enrollment *Enrollment
	Status     EnrollmentStatus
}

func (e *EnrollmentSpentError) Error() string {
	return fmt.Sprintf("enrollment %s for %q is %s", e.Enrollment.ID, e.Enrollment.Name, e.Status)
}

// Unwrap makes errors.Is(err, ErrEnrollmentSpent) true.
func (e *EnrollmentSpentError) Unwrap() error { return ErrEnrollmentSpent }

// EnrollIdentity is what a certificate issued through an enrollment will
// say: the identity flags of `minica issue`. Profile is Client for a link
// (and when empty); a bootstrap token may be for a Server too.
type EnrollIdentity struct {
	Profile            Profile  `json:"profile,omitempty"`
	CommonName         string   `json:"cn,omitempty"`
	Organization       []string `json:"org,omitempty"`
	OrganizationalUnit []string `json:"ou,omitempty"`
	Emails             []string `json:"emails,omitempty"`
	URIs               []string `json:"uris,omitempty"`
	DNSNames           []string `json:"dns,omitempty"`
	IPs                []net.IP `json:"ips,omitempty"`
	EmailInSubject     bool     `json:"email_in_subject,omitempty"`
	Validity           Duration `json:"validity,omitempty"`
	KeyType            KeyType  `json:"key_type,omitempty"`
	Force              bool     `json:"force,omitempty"`
	// Device, MaxDevices and Renews are set for a link made by sign-in
	// (CreateDeviceEnrollment, RenewDeviceEnrollment): the device label
	// the record keeps, the most valid devices its person may hold, and
	// the serial of the device certificate the link renews.
	Device     string `json:"device,omitempty"`
	MaxDevices int    `json:"max_devices,omitempty"`
	Renews     string `json:"renews,omitempty"`
}

// Enrollment is a one-time secret that lets its holder get a certificate
// for Name: a link a person opens (Kind KindLink: the page makes the
// key) or a bootstrap token a machine trades with a CSR (Kind KindToken,
// see RedeemToken). Only hashes of the token are stored: TokenHash
// (SHA-256 of the token bound to the name, compared in constant time) and
// ID, the first 12 hex digits of the token's plain SHA-256, which finds the
// file and is what logs and listings show.
type Enrollment struct {
	Version   int              `json:"version"`
	Kind      EnrollKind       `json:"kind,omitempty"`
	ID        string           `json:"id"`
	Name      string           `json:"name"`
	TokenHash string           `json:"token_sha256"`
	CSRFKey   []byte           `json:"csrf_key"` // keys the form's CSRF token (HMAC)
	Identity  EnrollIdentity   `json:"identity"`
	CreatedAt time.Time        `json:"created_at"`
	ExpiresAt time.Time        `json:"expires_at"`
	Status    EnrollmentStatus `json:"status"`
	// Set when the link is used: when, from which address, and the serial
	// issued (empty while the issuance runs, or when it failed: Error).
	UsedAt      time.Time `json:"used_at,omitzero"`
	UsedFrom    string    `json:"used_from,omitempty"`
	Serial      string    `json:"serial,omitempty"`
	Error       string    `json:"error,omitempty"`
	CancelledAt time.Time `json:"cancelled_at,omitzero"`
}

// StatusAt returns the enrollment's status at t: EnrollExpired for a
// pending one past ExpiresAt.
func (e *Enrollment) StatusAt(t time.Time) EnrollmentStatus {
	if e.Status == EnrollPending && !t.Before(e.ExpiresAt) {
		return EnrollExpired
	}
	return e.Status
}

// Profile is the profile of the certificate e is for: its identity's, or
// Client (every link, and a token made without one).
func (e *Enrollment) Profile() Profile {
	if e.Identity.Profile == "" {
		return Client
	}
	return e.Identity.Profile
}

// Request returns the issuance request of the enrollment: a certificate
// of its profile for Name, certifying pub (the key the server generated
// for a link, the CSR's for a token).
func (e *Enrollment) Request(pub crypto.PublicKey) Request {
	id := e.Identity
	return Request{
		Name: e.Name, Profile: e.Profile(), CommonName: id.CommonName,
		Organization: id.Organization, OrganizationalUnit: id.OrganizationalUnit,
		Emails: id.Emails, URIs: id.URIs, DNSNames: id.DNSNames, IPs: id.IPs, EmailInSubject: id.EmailInSubject,
		Validity: time.Duration(id.Validity), KeyType: id.KeyType, PublicKey: pub, Force: id.Force,
		RenewalOf: id.Renews, Device: id.Device,
	}
}

// SANs lists the subject alternative names the certificate of e will
// carry, as SANs lists a certificate's: the identity's, and for a server
// with neither a DNS name nor an IP address, its name as a DNS name (as
// Issue fills it in). An error means an identity that no longer validates.
func (e *Enrollment) SANs() ([]string, error) {
	req := e.Request(nil)
	uris, err := req.normalize(Settings{})
	if err != nil {
		return nil, err
	}
	return SANs(&x509.Certificate{DNSNames: req.DNSNames, IPAddresses: req.IPs, EmailAddresses: req.Emails, URIs: uris}), nil
}

// EnrollKeyType returns the key type to generate for the enrollment: its own, or
// the CA's default.
func (c *CA) EnrollKeyType(e *Enrollment) KeyType {
	if e.Identity.KeyType != "" {
		return e.Identity.KeyType
	}
	return c.Settings.KeyType
}

// NewEnrollment is what CreateEnrollment returns: the enrollment and its
// token, which exists nowhere else (show it once, never log it).
type NewEnrollment struct {
	Enrollment *Enrollment
	Token      string
}

// ValidateEnrollLifetime checks a link's lifetime: positive, at most
// MaxEnrollmentLifetime.
func ValidateEnrollLifetime(d time.Duration) error {
	if d <= 0 || d > MaxEnrollmentLifetime {
		return fmt.Errorf("invalid enrollment lifetime %s: want more than 0 and at most %s", FormatDuration(d), FormatDuration(MaxEnrollmentLifetime))
	}
	return nil
}

// CheckEnrollment validates an enrollment for name with identity id, as
// Issue will validate its request, without writing anything: a root issues
// no leaves (ErrRootCA), names, subject text, SANs, the validity against the
// CA's (from the link's expiry, the latest moment it can be used), the name
// constraints of every CA of the chain and a name already taken.
func (c *CA) CheckEnrollment(name string, id EnrollIdentity, lifetime time.Duration) error {
	return c.checkEnrollment(name, id, lifetime, KindLink)
}

func (c *CA) checkEnrollment(name string, id EnrollIdentity, lifetime time.Duration, kind EnrollKind) error {
	if c.IsRoot() {
		return ErrRootCA
	}
	if err := ValidateEnrollLifetime(lifetime); err != nil {
		return err
	}
	switch {
	case kind == KindLink && id.KeyType == Ed25519:
		return errors.New("invalid key type ed25519 for an enrollment: browsers cannot use Ed25519 client certificates")
	case kind == KindLink && id.Profile != "" && id.Profile != Client:
		return fmt.Errorf("invalid profile %s for an enrollment link: a link is for a person's client certificate", id.Profile)
	case id.Profile != "" && id.Profile != Client && id.Profile != Server:
		return fmt.Errorf("invalid profile %s for a bootstrap token: want client or server", id.Profile)
	}
	e := &Enrollment{Name: name, Identity: id}
	// A throwaway key stands in for the one the server will generate, so
	// that the template and the name constraints are checked now.
	probe, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	req := e.Request(probe.Public())
	uris, err := req.normalize(c.Settings)
	if err != nil {
		return err
	}
	now := c.Now().UTC().Truncate(time.Second)
	if _, _, err := c.validity(now.Add(lifetime), req.Validity); err != nil {
		return err
	}
	if err := c.checkNameFree(name, now, req.Force); err != nil {
		return err
	}
	tmpl, err := req.template(nil, probe.Public(), uris, now, now.Add(req.Validity), c.Settings)
	if err != nil {
		return err
	}
	return c.checkChainConstraints(tmpl)
}

// CreateEnrollment checks the request (CheckEnrollment) and writes a new
// pending enrollment for name, valid for lifetime. A name has at most one
// pending enrollment: another one gives ErrEnrollmentPending. The caller
// must hold the lock (see Lock).
func (c *CA) CreateEnrollment(name string, id EnrollIdentity, lifetime time.Duration) (*NewEnrollment, error) {
	return c.createEnrollment(name, id, lifetime, KindLink)
}

func (c *CA) createEnrollment(name string, id EnrollIdentity, lifetime time.Duration, kind EnrollKind) (*NewEnrollment, error) {
	if err := c.checkEnrollment(name, id, lifetime, kind); err != nil {
		return nil, err
	}
	now := c.Now().UTC().Truncate(time.Second)
	// A corrupt previous link is one a crash tore before its token was
	// shown: it blocks nothing.
	if prev, err := c.EnrollmentByName(name); err == nil && prev.StatusAt(now) == EnrollPending {
		return nil, &EnrollmentPendingError{Pending: prev}
	} else if err != nil && !errors.Is(err, ErrEnrollmentUnknown) && !errors.Is(err, ErrCorruptEnrollment) {
		return nil, err
	}
	for range 8 {
		raw := make([]byte, tokenBytes)
		if _, err := rand.Read(raw); err != nil {
			return nil, fmt.Errorf("generating enrollment token: %w", err)
		}
		token := base64.RawURLEncoding.EncodeToString(raw)
		csrf := make([]byte, 32)
		if _, err := rand.Read(csrf); err != nil {
			return nil, fmt.Errorf("generating enrollment token: %w", err)
		}
		e := &Enrollment{
			Version: 1, Kind: kind, ID: EnrollmentID(token), Name: name, TokenHash: tokenHash(name, token),
			CSRFKey: csrf, Identity: id, CreatedAt: now, ExpiresAt: now.Add(lifetime), Status: EnrollPending,
		}
		err := c.db.CreateEnrollment(storedEnrollment{ID: e.ID, Name: e.Name, Data: encodeEnrollment(e)})
		if errors.Is(err, fs.ErrExist) {
			continue // a 48-bit ID taken: draw another token
		}
		if err != nil {
			return nil, fmt.Errorf("writing enrollment: %w", err)
		}
		return &NewEnrollment{Enrollment: e, Token: token}, nil
	}
	return nil, errors.New("writing enrollment: 8 random tokens in a row had taken IDs")
}

// EnrollmentID returns the ID of the enrollment of token: the first 12 hex
// digits of its SHA-256. It is safe to log and show.
func EnrollmentID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:6])
}

// tokenHash is the stored verifier of token: SHA-256 over a label, the
// enrollment's name and the token, so that a token only ever opens the
// enrollment of the name it was made for.
func tokenHash(name, token string) string {
	sum := sha256.Sum256([]byte("minica enrollment token v1\x00" + name + "\x00" + token))
	return hex.EncodeToString(sum[:])
}

// ValidToken reports whether s has the shape of an enrollment token (43
// base64url characters), so that anything else is turned away before a
// file is looked up.
func ValidToken(s string) bool {
	if len(s) != base64.RawURLEncoding.EncodedLen(tokenBytes) {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil
}

func encodeEnrollment(e *Enrollment) []byte {
	b, _ := json.Marshal(e) // an Enrollment always marshals
	return append(b, '\n')
}

func isEnrollmentID(s string) bool { return store.IsEnrollmentID(s) }

// readEnrollment reads the enrollment of id.
func (c *CA) readEnrollment(id string) (*Enrollment, error) {
	if !isEnrollmentID(id) {
		return nil, fmt.Errorf("%w: %q", ErrEnrollmentUnknown, id)
	}
	se, err := c.db.Enrollment(id)
	if err != nil {
		return nil, err
	}
	return decodeEnrollment(se)
}

// decodeEnrollment decodes an enrollment as the store keeps it.
func decodeEnrollment(se storedEnrollment) (*Enrollment, error) {
	var e Enrollment
	if err := json.Unmarshal(se.Data, &e); err != nil || e.Version != 1 || e.ID != se.ID || ValidateName(e.Name) != nil {
		return nil, fmt.Errorf("%w %s", ErrCorruptEnrollment, se.Where)
	}
	return &e, nil
}

// LookupEnrollment returns the enrollment link of token, whatever its
// status. The stored hash is compared in constant time, and a token that
// is malformed or finds no file costs the same hashing and comparison, so
// that answers do not tell a near miss from a far one. Any failure matches
// ErrEnrollmentUnknown, except I/O errors; so does a bootstrap token,
// which opens no page.
func (c *CA) LookupEnrollment(token string) (*Enrollment, error) {
	return c.lookupEnrollment(token, KindLink)
}

func (c *CA) lookupEnrollment(token string, kind EnrollKind) (*Enrollment, error) {
	var e *Enrollment
	var err error
	if ValidToken(token) {
		e, err = c.readEnrollment(EnrollmentID(token))
	} else {
		err = ErrEnrollmentUnknown
	}
	name, want := "", strings.Repeat("0", 64)
	if e != nil {
		name, want = e.Name, e.TokenHash
	}
	got := tokenHash(name, token)
	if !equalTokenHash(got, want) || e == nil || e.Kind != kind {
		if err == nil || errors.Is(err, ErrEnrollmentUnknown) {
			return nil, ErrEnrollmentUnknown
		}
		return nil, err
	}
	return e, nil
}

// equalTokenHash compares a token's hash with the stored one in constant
// time; a variable so that a test sees every lookup make one comparison.
var equalTokenHash = func(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// EnrollmentByName returns the latest enrollment made for name.
func (c *CA) EnrollmentByName(name string) (*Enrollment, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	se, err := c.db.EnrollmentByName(name)
	if err != nil {
		return nil, err
	}
	return decodeEnrollment(se)
}

// Enrollments iterates over every enrollment in ID order (IDs are random:
// sort the result for another order). A file that does not decode is
// yielded as an error matching ErrCorruptEnrollment, and iteration goes on
// if the consumer does.
func (c *CA) Enrollments() iter.Seq2[*Enrollment, error] {
	return func(yield func(*Enrollment, error) bool) {
		for se, err := range c.db.Enrollments() {
			var e *Enrollment
			if err == nil {
				e, err = decodeEnrollment(se)
			}
			if !yield(e, err) {
				return
			}
		}
	}
}

// CancelEnrollment cancels the pending enrollment of kind named by ref: an
// ID, or a name (its latest enrollment). One of the other kind is not
// cancelled: *EnrollKindError. The caller must hold the lock.
func (c *CA) CancelEnrollment(kind EnrollKind, ref string) (*Enrollment, error) {
	var e *Enrollment
	var err error
	if isEnrollmentID(ref) {
		e, err = c.readEnrollment(ref)
	}
	if e == nil && ValidateName(ref) == nil {
		e, err = c.EnrollmentByName(ref)
	}
	if e == nil {
		if err == nil {
			err = fmt.Errorf("%w: %s is neither an enrollment ID nor a name", ErrEnrollmentUnknown, printable(ref))
		}
		return nil, err
	}
	if e.Kind != kind {
		return e, &EnrollKindError{Enrollment: e, Want: kind}
	}
	now := c.Now().UTC()
	if st := e.StatusAt(now); st != EnrollPending {
		return e, &EnrollmentSpentError{Enrollment: e, Status: st}
	}
	e.Status, e.CancelledAt = EnrollCancelled, now.Truncate(time.Second)
	if err := c.writeEnrollment(e); err != nil {
		return nil, err
	}
	return e, nil
}

// EnrollmentPendingError is returned for a second enrollment of a name
// whose enrollment Pending is still pending, of either kind.
type EnrollmentPendingError struct{ Pending *Enrollment }

func (e *EnrollmentPendingError) Error() string {
	p := e.Pending
	return fmt.Sprintf("%v: %q has %s %s, expiring %s", ErrEnrollmentPending, p.Name, p.Kind, p.ID, p.ExpiresAt.Format(time.RFC3339))
}

// Unwrap makes errors.Is(err, ErrEnrollmentPending) true.
func (e *EnrollmentPendingError) Unwrap() error { return ErrEnrollmentPending }

// EnrollKindError is an enrollment of another kind than the one asked for.
type EnrollKindError struct {
	Enrollment *Enrollment
	Want       EnrollKind
}

func (e *EnrollKindError) Error() string {
	return fmt.Sprintf("%q has %s (%s), not %s", e.Enrollment.Name, e.Enrollment.Kind, e.Enrollment.ID, e.Want)
}

func (c *CA) writeEnrollment(e *Enrollment) error {
	return c.db.PutEnrollment(storedEnrollment{ID: e.ID, Name: e.Name, Data: encodeEnrollment(e)})
}

// Enroll redeems token and issues its client certificate for pub, the key
// the server generated for the person (minica stores no key: the record
// has no key, as for a signed CSR). The caller must hold the lock.
//
// The token is burnt first, durably, before anything is signed: a crash
// at any later point leaves a used (or failed) link, never a link that
// issues twice. A token that is not pending gives an
// *EnrollmentSpentError; one that matches nothing, ErrEnrollmentUnknown.
// When the issuance fails the enrollment is marked failed with the error.
func (c *CA) Enroll(signer crypto.Signer, token, from string, pub crypto.PublicKey) (*Issued, *Enrollment, error) {
	e, err := c.LookupEnrollment(token)
	if err != nil {
		return nil, nil, err
	}
	return c.redeem(signer, e, from, pub)
}

// redeem burns e, durably, then issues its certificate for pub (see
// Enroll).
func (c *CA) redeem(signer crypto.Signer, e *Enrollment, from string, pub crypto.PublicKey) (*Issued, *Enrollment, error) {
	now := c.Now().UTC()
	if st := e.StatusAt(now); st != EnrollPending {
		return nil, e, &EnrollmentSpentError{Enrollment: e, Status: st}
	}
	// A device's limit is checked here, under the lock, so that two
	// links made side by side cannot both pass it; a refusal leaves the
	// link pending.
	pred, err := c.checkDeviceRedeem(e)
	if err != nil {
		return nil, e, err
	}
	e.Status, e.UsedAt, e.UsedFrom = EnrollUsed, now.Truncate(time.Second), from
	if err := c.writeEnrollment(e); err != nil {
		return nil, nil, err
	}
	issued, err := c.Issue(signer, e.Request(pub))
	if err != nil {
		e.Status, e.Error = EnrollFailed, err.Error()
		return nil, e, errors.Join(err, c.writeEnrollment(e))
	}
	e.Serial = issued.Record.Serial
	// The certificate is issued and recorded: a failure to note its
	// serial in the enrollment loses nothing but that note.
	err = c.writeEnrollment(e)
	if pred != nil {
		err = errors.Join(err, c.supersedeDevice(signer, pred, issued.Record))
	}
	return issued, e, err
}

// ValidateEnrollURL checks the base URL of enrollment links: https with a
// host and no path, query or user (http only for a loopback host, for
// tests), in plain ASCII.
func ValidateEnrollURL(s string) error {
	u, err := url.Parse(s)
	bad := err != nil || !isHTTPURL(s) || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery
	if !bad && u.Scheme == "http" && !slices.Contains([]string{"localhost", "127.0.0.1", "::1"}, u.Hostname()) {
		bad = true
	}
	if bad {
		return fmt.Errorf("invalid enrollment base URL %s: want https://HOST[:PORT], the public address of minica serve --listen-tls, with no path", printable(s))
	}
	return nil
}

// SetEnrollURL records the base URL of enrollment links ("" removes it).
// The caller must hold the lock (see Lock).
func (c *CA) SetEnrollURL(u string) error {
	if u != "" {
		if err := ValidateEnrollURL(u); err != nil {
			return err
		}
	}
	s := c.Settings
	s.EnrollURL = strings.TrimSuffix(u, "/")
	return c.saveSettings(s)
}

// EnrollLink returns the link of token under base.
func EnrollLink(base, token string) string {
	return strings.TrimSuffix(base, "/") + "/enroll/" + token
}
