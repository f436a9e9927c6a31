package ca

// Sign-in devices (serve/signin, docs/sign-in.md): a person who signed in
// with the company's identity provider gets one client certificate per
// device they name, through an enrollment link made for them, and sees,
// renews and revokes those certificates. The policy of who may sign in
// is serve/signin's; what a device is, how many a person may hold, and
// what renewing and revoking one does, are decided here.

import (
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"minica/revoke"
)

// DefaultMaxDevices is how many valid device certificates a person may
// hold unless configured otherwise.
const DefaultMaxDevices = 5

// Errors of the device functions.
var (
	// ErrTooManyDevices is matched by *TooManyDevicesError.
	ErrTooManyDevices = errors.New("too many devices")
	// ErrNotDevice: the serial is not a sign-in device certificate of
	// the person who asks (or of anyone).
	ErrNotDevice = errors.New("not a device certificate of this person")
	// ErrDeviceReason: a person may revoke their device for
	// keyCompromise, superseded or cessationOfOperation only.
	ErrDeviceReason = errors.New("reason not offered for a device")
	// ErrDeviceNotValid: the device's certificate is revoked, expired or
	// already renewed, so it can be neither renewed nor revoked again.
	ErrDeviceNotValid = errors.New("the device certificate is no longer valid")
)

// TooManyDevicesError is returned when a person holds Max valid device
// certificates already.
type TooManyDevicesError struct {
	Email string
	Max   int
}

func (e *TooManyDevicesError) Error() string {
	return fmt.Sprintf("%s already holds %d valid device certificates, the most allowed", e.Email, e.Max)
}

// Unwrap makes errors.Is(err, ErrTooManyDevices) true.
func (e *TooManyDevicesError) Unwrap() error { return ErrTooManyDevices }

// DeviceReasons are the reasons a person may give for revoking a device:
// lost or stolen (keyCompromise, which also revokes its renewals), replaced
// (superseded), no longer used (cessationOfOperation).
var DeviceReasons = []revoke.Reason{revoke.KeyCompromise, revoke.Superseded, revoke.CessationOfOperation}

// NormalizeDeviceLabel returns the label a person typed for a device with
// its spaces collapsed, checked as subject text is (ValidateText): 1 to 64
// characters, no control or invisible ones.
func NormalizeDeviceLabel(label string) (string, error) {
	l := strings.Join(strings.Fields(label), " ")
	if err := ValidateText("device name", l); err != nil {
		return "", err
	}
	return l, nil
}

// DeviceName returns the certificate name of the device labelled label of
// the person with email: the address and the label in name characters (at
// most 30 and 20 of them: letters, digits, '.', '_' and '-'), then 10 hex
// digits of a SHA-256 of both, case-insensitive, so that the name is the
// same for the same person and device and differs for any other
// ("simon@example.com", "Simon's laptop" gives
// "simon.example.com-simon-s-laptop-" and 10 hex digits). Both must be
// valid (ValidateEmail, NormalizeDeviceLabel).
func DeviceName(email, label string) string {
	sum := sha256.Sum256([]byte("minica device v1\x00" + strings.ToLower(email) + "\x00" + strings.ToLower(label)))
	who := nameChars(strings.Replace(email, "@", ".", 1), 30)
	if who == "" {
		who = "u"
	}
	what := nameChars(label, 20)
	if what == "" {
		what = "device"
	}
	return who + "-" + what + "-" + hex.EncodeToString(sum[:5])
}

// nameChars lowercases s, turns every run of characters a name may not
// hold into one '-', and cuts it to at most n characters, without '.',
// '_' or '-' at either end.
func nameChars(s string, n int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "._-")
	if len(out) > n {
		out = strings.TrimRight(out[:n], "._-")
	}
	return out
}

// DeviceRequest asks for an enrollment link for a new device of a person
// who signed in: what their certificate will say (the email SAN, in the
// subject too, the CN and OUs) and how many valid devices they may hold.
type DeviceRequest struct {
	Email              string
	CommonName         string
	OrganizationalUnit []string
	Label              string        // as the person typed it
	Validity           time.Duration // of the certificate; 0: the CA's default for clients
	MaxDevices         int           // 0: DefaultMaxDevices
	Lifetime           time.Duration // of the link
}

// CreateDeviceEnrollment makes the enrollment link of a new device (see
// DeviceRequest), after the checks of CreateEnrollment and a count of the
// person's valid devices; the limit is checked again when the link is
// used (CA.Enroll), under the lock. A pending link for the same device is
// cancelled first: the person asked again. The caller must hold the lock.
func (c *CA) CreateDeviceEnrollment(req DeviceRequest) (*NewEnrollment, error) {
	label, err := NormalizeDeviceLabel(req.Label)
	if err != nil {
		return nil, err
	}
	if err := ValidateEmail(req.Email); err != nil {
		return nil, err
	}
	if req.MaxDevices <= 0 {
		req.MaxDevices = DefaultMaxDevices
	}
	if n, err := c.countDevices(req.Email, ""); err != nil {
		return nil, err
	} else if n >= req.MaxDevices {
		return nil, &TooManyDevicesError{Email: req.Email, Max: req.MaxDevices}
	}
	id := EnrollIdentity{
		Profile: Client, CommonName: req.CommonName, OrganizationalUnit: req.OrganizationalUnit,
		Emails: []string{req.Email}, EmailInSubject: true, Validity: Duration(req.Validity),
		Device: label, MaxDevices: req.MaxDevices,
	}
	return c.createDeviceLink(DeviceName(req.Email, label), id, req.Lifetime)
}

// RenewDeviceEnrollment makes the enrollment link that renews the device
// certificate serial of the person with email: the same name, identity and
// device, a new key; its use revokes the old certificate as superseded
// (see CA.Enroll). The certificate must be the person's, valid and not yet
// renewed. The caller must hold the lock.
func (c *CA) RenewDeviceEnrollment(email, serial string, lifetime time.Duration) (*NewEnrollment, error) {
	rec, err := c.deviceRecord(email, serial)
	if err != nil {
		return nil, err
	}
	cert, err := c.Certificate(rec)
	if err != nil {
		return nil, err
	}
	id := EnrollIdentity{
		Profile: Client, CommonName: cert.Subject.CommonName, OrganizationalUnit: cert.Subject.OrganizationalUnit,
		Emails: cert.EmailAddresses, EmailInSubject: true, Validity: Duration(cert.NotAfter.Sub(cert.NotBefore)),
		Force: true, Device: rec.Device, Renews: rec.Serial,
	}
	return c.createDeviceLink(rec.Name, id, lifetime)
}

// createDeviceLink cancels a pending device link of name and makes a new
// one.
func (c *CA) createDeviceLink(name string, id EnrollIdentity, lifetime time.Duration) (*NewEnrollment, error) {
	prev, err := c.EnrollmentByName(name)
	switch {
	case err == nil && prev.Identity.Device != "" && prev.StatusAt(c.Now()) == EnrollPending:
		if _, err := c.CancelEnrollment(KindLink, prev.ID); err != nil {
			return nil, err
		}
	case err != nil && !errors.Is(err, ErrEnrollmentUnknown) && !errors.Is(err, ErrCorruptEnrollment):
		return nil, err
	}
	return c.CreateEnrollment(name, id, lifetime)
}

// Devices returns the sign-in device certificates of the person with
// email: for each device the newest certificate, newest first.
func (c *CA) Devices(email string) ([]*Record, error) {
	recs, err := c.RecordsByEmail(email)
	if err != nil {
		return nil, err
	}
	// A device's newest certificate: the latest issued; of two issued in
	// the same second, the one not renewed.
	newest := map[string]*Record{}
	for _, r := range recs {
		if r.Device == "" || !r.Issued() {
			continue
		}
		if n := newest[r.Name]; n == nil || r.IssuedAt.After(n.IssuedAt) || r.IssuedAt.Equal(n.IssuedAt) && n.RenewedBy != "" {
			newest[r.Name] = r
		}
	}
	out := make([]*Record, 0, len(newest))
	for _, r := range newest {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Record) int {
		if c := b.IssuedAt.Compare(a.IssuedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// countDevices counts the valid device certificates of email, leaving out
// the serial except (the one a renewal replaces).
func (c *CA) countDevices(email, except string) (int, error) {
	recs, err := c.RecordsByEmail(email)
	if err != nil {
		return 0, err
	}
	now := c.Now()
	n := 0
	for _, r := range recs {
		if r.Device != "" && r.Serial != except && r.StatusAt(now) == StatusValid {
			n++
		}
	}
	return n, nil
}

// deviceRecord returns the record of serial when it is a valid, not yet
// renewed device certificate of email; anything else gives an error
// matching ErrNotDevice or ErrDeviceNotValid.
func (c *CA) deviceRecord(email, serial string) (*Record, error) {
	n, err := ParseSerial(serial)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotDevice, err)
	}
	rec, err := c.Record(n)
	if errors.Is(err, ErrNotFound) || (err == nil && (rec.Device == "" || !hasEmail(rec, email))) {
		return nil, fmt.Errorf("serial %s: %w", serial, ErrNotDevice)
	}
	if err != nil {
		return nil, err
	}
	if rec.StatusAt(c.Now()) != StatusValid || rec.RenewedBy != "" {
		return nil, fmt.Errorf("serial %s (%s): %w", rec.Serial, rec.StatusAt(c.Now()), ErrDeviceNotValid)
	}
	return rec, nil
}

// checkDeviceRedeem checks, under the lock, that the device link e may be
// used now: the person holds fewer valid devices than its MaxDevices, and
// a renewal's certificate is still valid and not renewed (returned, to be
// superseded). Any other link passes.
func (c *CA) checkDeviceRedeem(e *Enrollment) (*Record, error) {
	id := e.Identity
	if id.Device == "" || len(id.Emails) != 1 {
		return nil, nil
	}
	if id.Renews != "" {
		return c.deviceRecord(id.Emails[0], id.Renews)
	}
	n, err := c.countDevices(id.Emails[0], "")
	if err != nil {
		return nil, err
	}
	if n >= max(id.MaxDevices, 1) {
		return nil, &TooManyDevicesError{Email: id.Emails[0], Max: id.MaxDevices}
	}
	return nil, nil
}

// supersedeDevice links the renewed device certificate pred to its
// successor, revokes it as superseded and publishes a CRL that says so.
func (c *CA) supersedeDevice(signer crypto.Signer, pred, successor *Record) error {
	if err := c.linkTo(pred, successor); err != nil {
		return err
	}
	res, err := c.RevokeRecord(pred, revoke.Superseded)
	if err != nil {
		return fmt.Errorf("%w: issued serial %s, but revoking its predecessor %s failed: %w", ErrIssuanceIncomplete, successor.Serial, pred.Serial, err)
	}
	if _, err := c.PublishRevocations(signer, res.ChangedRecords()); err != nil {
		return fmt.Errorf("serial %s was revoked as superseded by %s, but publishing the CRL failed: %w", pred.Serial, successor.Serial, err)
	}
	return nil
}

// RevokeDevice revokes the device certificate serial of the person with
// email for reason (one of DeviceReasons) and publishes a CRL, so that
// every replica and proxy learns of it as of any revocation. The caller
// must hold the lock.
func (c *CA) RevokeDevice(signer crypto.Signer, email, serial string, reason revoke.Reason) (*RevokeResult, error) {
	if !slices.Contains(DeviceReasons, reason) {
		return nil, fmt.Errorf("%w: %s", ErrDeviceReason, reason)
	}
	rec, err := c.deviceRecord(email, serial)
	if err != nil {
		return nil, err
	}
	res, err := c.RevokeRecord(rec, reason)
	if err != nil {
		return nil, err
	}
	if _, err := c.PublishRevocations(signer, res.ChangedRecords()); err != nil {
		return res, fmt.Errorf("serial %s was revoked, but publishing the CRL failed: %w", rec.Serial, err)
	}
	return res, nil
}
