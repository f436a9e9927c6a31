package ca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"minica/revoke"
)

func TestDeviceName(t *testing.T) {
	tests := []struct {
		email, label, wantPrefix string
	}{
		{"simon@example.com", "Simon's laptop", "simon.example.com-simon-s-laptop-"},
		{"a+b@example.com", "phone", "a-b.example.com-phone-"},
		{"_x@example.com", "☃", "x.example.com-device-"},
		{"a.very.long.local.part.indeed@example.com", "an even longer device label here", "a.very.long.local.part.indeed-an-even-longer-devic-"},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		got := DeviceName(tt.email, tt.label)
		if !strings.HasPrefix(got, tt.wantPrefix) || len(got) != len(tt.wantPrefix)+10 {
			t.Errorf("DeviceName(%q, %q) = %q; want %q and 10 hex digits", tt.email, tt.label, got, tt.wantPrefix)
		}
		if err := ValidateName(got); err != nil {
			t.Errorf("DeviceName(%q, %q) = %q: %v", tt.email, tt.label, got, err)
		}
		seen[got] = true
	}
	// The same person and device in another case: the same name; a
	// device whose label differs only where the name drops characters,
	// or another person whose address reads the same: another name.
	if DeviceName("Simon@Example.com", "SIMON'S LAPTOP") != DeviceName("simon@example.com", "simon's laptop") {
		t.Error("DeviceName depends on case")
	}
	for _, other := range [][2]string{{"simon@example.com", "Simon-s laptop"}, {"a-b@example.com", "phone"}} {
		if n := DeviceName(other[0], other[1]); seen[n] {
			t.Errorf("DeviceName(%q, %q) = %q, the name of another device", other[0], other[1], n)
		}
	}
}

func TestNormalizeDeviceLabel(t *testing.T) {
	tests := []struct{ in, want, wantErr string }{
		{in: "  simon's   laptop ", want: "simon's laptop"},
		{in: "   ", wantErr: "empty device name"},
		{in: "a\u202eb", wantErr: "invalid device name"},
		{in: strings.Repeat("x", 65), wantErr: "at most 64 allowed"},
	}
	for _, tt := range tests {
		got, err := NormalizeDeviceLabel(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("NormalizeDeviceLabel(%q) error = %v; want containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("NormalizeDeviceLabel(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// enrollDevice redeems the device link nl with a new key, as serve/enroll
// does.
func enrollDevice(t *testing.T, c *CA, signer crypto.Signer, nl *NewEnrollment) (*Issued, error) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	issued, _, err := c.Enroll(signer, nl.Token, "192.0.2.1", key.Public())
	return issued, err
}

func newDevice(t *testing.T, c *CA, signer crypto.Signer, email, label string, max int) *Issued {
	t.Helper()
	nl, err := c.CreateDeviceEnrollment(DeviceRequest{Email: email, CommonName: "Simon", OrganizationalUnit: []string{"eng"}, Label: label, MaxDevices: max, Lifetime: time.Hour})
	if err != nil {
		t.Fatalf("CreateDeviceEnrollment(%q): %v", label, err)
	}
	issued, err := enrollDevice(t, c, signer, nl)
	if err != nil {
		t.Fatalf("Enroll(%q): %v", label, err)
	}
	return issued
}

func TestDeviceEnrollment(t *testing.T) {
	c, signer := newEnrollCA(t)
	issued := newDevice(t, c, signer, "simon@example.com", "Simon's  laptop", 2)
	rec, cert := issued.Record, issued.Cert
	if rec.Device != "Simon's laptop" || rec.Name != DeviceName("simon@example.com", "Simon's laptop") {
		t.Errorf("record = %+v; want device %q under its device name", rec, "Simon's laptop")
	}
	if cert.Subject.CommonName != "Simon" || len(cert.EmailAddresses) != 1 || cert.EmailAddresses[0] != "simon@example.com" ||
		strings.Join(cert.Subject.OrganizationalUnit, ",") != "eng" || !strings.Contains(rec.Subject, "emailAddress=simon@example.com") {
		t.Errorf("certificate subject %q SANs %v; want CN Simon, OU eng, the email in SAN and subject", rec.Subject, cert.EmailAddresses)
	}
	// Kept in the record as read back.
	got, err := c.Record(cert.SerialNumber)
	if err != nil || got.Device != "Simon's laptop" {
		t.Errorf("Record() = %+v, %v; want the device label", got, err)
	}
	// The same device again is its name, taken.
	nl, err := c.CreateDeviceEnrollment(DeviceRequest{Email: "simon@example.com", CommonName: "Simon", Label: "simon's laptop", MaxDevices: 2, Lifetime: time.Hour})
	if !errors.Is(err, ErrNameTaken) {
		t.Errorf("CreateDeviceEnrollment(same device) = %v, %v; want ErrNameTaken", nl, err)
	}
	newDevice(t, c, signer, "simon@example.com", "phone", 2)
	// A third is over the limit of 2, for simon only.
	before := countRecords(t, c)
	_, err = c.CreateDeviceEnrollment(DeviceRequest{Email: "Simon@example.com", CommonName: "Simon", Label: "tablet", MaxDevices: 2, Lifetime: time.Hour})
	var tooMany *TooManyDevicesError
	if !errors.As(err, &tooMany) || tooMany.Max != 2 {
		t.Errorf("a third device: %v; want *TooManyDevicesError of 2", err)
	}
	newDevice(t, c, signer, "bob@example.com", "tablet", 2)
	if n := countRecords(t, c); n != before+1 {
		t.Errorf("%d records; want %d (bob's tablet only)", n, before+1)
	}
	devs, err := c.Devices("SIMON@example.com")
	if err != nil || len(devs) != 2 || devs[0].Device != "phone" || devs[1].Device != "Simon's laptop" {
		t.Errorf("Devices() = %v, %v; want phone, then Simon's laptop", devs, err)
	}
}

// Two links made side by side both pass the count when made; only one of
// them is used, the other refused under the lock and left pending.
func TestDeviceLimitAtRedeem(t *testing.T) {
	c, signer := newEnrollCA(t)
	var links []*NewEnrollment
	for _, label := range []string{"one", "two"} {
		nl, err := c.CreateDeviceEnrollment(DeviceRequest{Email: "simon@example.com", CommonName: "Simon", Label: label, MaxDevices: 1, Lifetime: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		links = append(links, nl)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	var mu sync.Mutex // the lock serve takes, in one process
	for i, nl := range links {
		wg.Go(func() {
			key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			mu.Lock()
			unlock, err := c.Lock(5 * time.Second)
			if err == nil {
				_, _, err = c.Enroll(signer, nl.Token, "192.0.2.1", key.Public())
				unlock()
			}
			mu.Unlock()
			errs[i] = err
		})
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrTooManyDevices):
			refused++
		default:
			t.Errorf("Enroll: %v", err)
		}
	}
	if ok != 1 || refused != 1 || countRecords(t, c) != 1 {
		t.Fatalf("%d issued, %d refused, %d records; want 1, 1, 1", ok, refused, countRecords(t, c))
	}
	for _, nl := range links {
		e, err := c.LookupEnrollment(nl.Token)
		if err != nil {
			t.Fatal(err)
		}
		if e.Status != EnrollUsed && e.Status != EnrollPending {
			t.Errorf("link %s is %s; want used or (refused) pending", e.ID, e.Status)
		}
	}
}

func TestRenewDevice(t *testing.T) {
	c, signer := newEnrollCA(t)
	old := newDevice(t, c, signer, "simon@example.com", "laptop", 1)
	// Another person cannot renew it, nor can a serial that is no device.
	for _, who := range []struct{ email, serial string }{{"bob@example.com", old.Record.Serial}, {"simon@example.com", strings.Repeat("0", 31) + "1"}, {"simon@example.com", "xyz"}} {
		if _, err := c.RenewDeviceEnrollment(who.email, who.serial, time.Hour); !errors.Is(err, ErrNotDevice) {
			t.Errorf("RenewDeviceEnrollment(%s, %s) error = %v; want ErrNotDevice", who.email, who.serial, err)
		}
	}
	nl, err := c.RenewDeviceEnrollment("simon@example.com", old.Record.Serial, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c.Now = fixedClock(enrollStart.Add(time.Minute))
	renewed, err := enrollDevice(t, c, signer, nl) // at the limit of 1: a renewal replaces, it adds nothing
	if err != nil {
		t.Fatalf("renewing at the limit: %v", err)
	}
	if renewed.Record.Name != old.Record.Name || renewed.Record.Device != "laptop" || renewed.Record.RenewalOf != old.Record.Serial ||
		renewed.Cert.Subject.CommonName != "Simon" {
		t.Errorf("renewal record = %+v; want the device's name and label, renewing %s", renewed.Record, old.Record.Serial)
	}
	pred, err := c.Record(old.Cert.SerialNumber)
	if err != nil || pred.Status != StatusRevoked || pred.Reason != "superseded" || pred.RenewedBy != renewed.Record.Serial {
		t.Errorf("predecessor = %+v, %v; want revoked as superseded, renewed by %s", pred, err, renewed.Record.Serial)
	}
	crl, err := c.ReadPublishedCRL()
	if err != nil || !crl.CRL.IsRevoked(old.Cert.SerialNumber) {
		t.Errorf("published CRL lists the superseded certificate: %v", err)
	}
	// Renewing the old one again is refused.
	if _, err := c.RenewDeviceEnrollment("simon@example.com", old.Record.Serial, time.Hour); !errors.Is(err, ErrDeviceNotValid) {
		t.Errorf("renewing a superseded device: %v; want ErrDeviceNotValid", err)
	}
	devs, err := c.Devices("simon@example.com")
	if err != nil || len(devs) != 1 || devs[0].Serial != renewed.Record.Serial {
		t.Errorf("Devices() = %v, %v; want the renewal only", devs, err)
	}
}

func TestRevokeDevice(t *testing.T) {
	c, signer := newEnrollCA(t)
	dev := newDevice(t, c, signer, "simon@example.com", "laptop", 2)
	plain, err := c.Issue(signer, Request{Name: "plain", Profile: Client, Emails: []string{"simon@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, email, serial string
		reason              revoke.Reason
		want                error
	}{
		{"another person", "bob@example.com", dev.Record.Serial, revoke.KeyCompromise, ErrNotDevice},
		{"not a device", "simon@example.com", plain.Record.Serial, revoke.KeyCompromise, ErrNotDevice},
		{"a reason not offered", "simon@example.com", dev.Record.Serial, revoke.CACompromise, ErrDeviceReason},
	}
	for _, tt := range tests {
		if _, err := c.RevokeDevice(signer, tt.email, tt.serial, tt.reason); !errors.Is(err, tt.want) {
			t.Errorf("%s: RevokeDevice() error = %v; want %v", tt.name, err, tt.want)
		}
	}
	if rec, _ := c.Record(dev.Cert.SerialNumber); rec.Status != StatusValid {
		t.Fatalf("after the refusals the device is %s; want valid", rec.Status)
	}
	res, err := c.RevokeDevice(signer, "Simon@Example.com", dev.Record.Serial, revoke.KeyCompromise)
	if err != nil || res.Record.Status != StatusRevoked || res.Record.Reason != "keyCompromise" {
		t.Fatalf("RevokeDevice() = %+v, %v; want revoked for keyCompromise", res, err)
	}
	crl, err := c.ReadPublishedCRL()
	if err != nil || !crl.CRL.IsRevoked(dev.Cert.SerialNumber) {
		t.Errorf("the published CRL does not list the revoked device: %v", err)
	}
	if _, err := c.RevokeDevice(signer, "simon@example.com", dev.Record.Serial, revoke.KeyCompromise); !errors.Is(err, ErrDeviceNotValid) {
		t.Errorf("revoking again: %v; want ErrDeviceNotValid", err)
	}
	// A revoked device frees its place and its name.
	newDevice(t, c, signer, "simon@example.com", "laptop", 1)
}
