package ca

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"minica/formats"
	"minica/revoke"
)

// TargetKind tells how an argument named its certificates (see Resolve).
type TargetKind int

// The ways of naming a certificate, tried in this order.
const (
	// TargetFile: the path of an existing certificate file (PEM or DER).
	TargetFile TargetKind = iota + 1
	// TargetName: a certificate name with at least one record.
	TargetName
	// TargetSerial: a serial number in hex, in any case, with or without
	// colons.
	TargetSerial
)

// Target is what one argument names (see Resolve).
type Target struct {
	Arg  string
	Kind TargetKind
	// Cert is the certificate read from the file, for TargetFile only.
	Cert *x509.Certificate
	// Records holds, for a name, every record issued under it, oldest first
	// (as RecordsByName), and for a serial or a file the one record.
	Records []*Record
}

// ErrAmbiguous is matched by *AmbiguousError.
var ErrAmbiguous = errors.New("ambiguous name")

// NotFoundError is returned by Resolve when an argument names no record.
// It matches ErrNotFound.
type NotFoundError struct {
	Arg    string
	Kind   TargetKind // TargetFile, TargetSerial, or 0 when nothing matched
	Serial string     // the serial looked up, for TargetFile and TargetSerial
}

func (e *NotFoundError) Error() string {
	switch e.Kind {
	case TargetFile:
		return fmt.Sprintf("%s (serial %s) was not issued by this CA", e.Arg, e.Serial)
	case TargetSerial:
		return fmt.Sprintf("serial %s: %v", e.Serial, ErrNotFound)
	}
	return fmt.Sprintf("no certificate named %q, and it is not a serial number or a certificate file", e.Arg)
}

// Unwrap makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// AmbiguousError is returned by Target.Revocable for a name with several
// unrevoked certificates, and by Target.Liftable for one with several on
// hold (OnHold set); Records lists them, oldest first. It matches
// ErrAmbiguous.
type AmbiguousError struct {
	Name    string
	Records []*Record
	OnHold  bool
}

func (e *AmbiguousError) Error() string {
	list := make([]string, len(e.Records))
	for i, r := range e.Records {
		list[i] = fmt.Sprintf("%s (issued %s)", r.Serial, r.IssuedAt.UTC().Format(time.RFC3339))
	}
	what := "unrevoked certificates"
	if e.OnHold {
		what = "certificates on hold"
	}
	return fmt.Sprintf("%q has %d %s: %s", e.Name, len(e.Records), what, strings.Join(list, ", "))
}

// Unwrap makes errors.Is(err, ErrAmbiguous) true.
func (e *AmbiguousError) Unwrap() error { return ErrAmbiguous }

// UnusableError is returned by Target.Newest and Target.NewestValid when
// what an argument names holds no certificate in the wanted state. Record
// is the newest certificate it names, nil when it names none that was
// issued (only pending or void serials).
type UnusableError struct {
	Arg    string
	Record *Record
	Status Status // Record's status at the time asked
}

func (e *UnusableError) Error() string {
	if e.Record == nil {
		return fmt.Sprintf("%q has no issued certificate", e.Arg)
	}
	return fmt.Sprintf("certificate %q (serial %s) is %s", e.Record.Name, e.Record.Serial, e.Status)
}

// Resolve finds the certificates arg names: the path of an existing
// certificate file (the record of its serial), else a name with records
// (all of them), else a serial number (its record). Errors are a
// *NotFoundError when nothing matches, or the error of reading a file or
// a record. For a file, the Target with Cert set is returned even with an
// error, so that a caller that judges any certificate (verify) can go on
// with one this CA did not issue.
func (c *CA) Resolve(arg string) (*Target, error) {
	if info, err := os.Stat(arg); err == nil && info.Mode().IsRegular() {
		cert, err := readCertFile(arg)
		if err != nil {
			return nil, err
		}
		t := &Target{Arg: arg, Kind: TargetFile, Cert: cert}
		r, err := c.Record(cert.SerialNumber)
		if errors.Is(err, ErrNotFound) {
			return t, &NotFoundError{Arg: arg, Kind: TargetFile, Serial: SerialHex(cert.SerialNumber)}
		}
		if err != nil {
			return t, err
		}
		t.Records = []*Record{r}
		return t, nil
	}
	if ValidateName(arg) == nil {
		recs, err := c.RecordsByName(arg)
		if err != nil {
			return nil, err
		}
		if len(recs) > 0 {
			return &Target{Arg: arg, Kind: TargetName, Records: recs}, nil
		}
	}
	serial, err := ParseSerial(arg)
	if err != nil {
		return nil, &NotFoundError{Arg: arg}
	}
	r, err := c.Record(serial)
	if errors.Is(err, ErrNotFound) {
		return nil, &NotFoundError{Arg: arg, Kind: TargetSerial, Serial: SerialHex(serial)}
	}
	if err != nil {
		return nil, err
	}
	return &Target{Arg: arg, Kind: TargetSerial, Records: []*Record{r}}, nil
}

// readCertFile reads the first certificate of a PEM or DER file.
func readCertFile(file string) (*x509.Certificate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading certificate: %w", err)
	}
	certs, err := formats.ParseCertificates(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return certs[0], nil
}

// Newest returns the newest record the target names that became a
// certificate (whatever its status now), or an *UnusableError with a nil
// Record when there is none.
func (t *Target) Newest() (*Record, error) {
	for i := len(t.Records) - 1; i >= 0; i-- {
		if t.Records[i].Issued() {
			return t.Records[i], nil
		}
	}
	return nil, &UnusableError{Arg: t.Arg}
}

// NewestValid returns the newest record the target names that is valid at
// now, or an *UnusableError naming the newest one and its status.
func (t *Target) NewestValid(now time.Time) (*Record, error) {
	for i := len(t.Records) - 1; i >= 0; i-- {
		if t.Records[i].StatusAt(now) == StatusValid {
			return t.Records[i], nil
		}
	}
	if len(t.Records) == 0 {
		return nil, &UnusableError{Arg: t.Arg}
	}
	r := t.Records[len(t.Records)-1]
	return nil, &UnusableError{Arg: t.Arg, Record: r, Status: r.StatusAt(now)}
}

// Revocable returns the records to revoke for the target. A serial or a
// file names its one record. A name names its unrevoked certificates (an
// *AmbiguousError when there are several, unless all), or its revoked ones
// when none is left, so that repeating a revocation is harmless; a name
// with neither (only pending or void serials) gives a *NotFoundError.
func (t *Target) Revocable(all bool) ([]*Record, error) {
	if t.Kind != TargetName {
		return t.Records, nil
	}
	var live, revoked []*Record
	for _, r := range t.Records {
		switch r.Status {
		case StatusValid:
			live = append(live, r)
		case StatusRevoked:
			revoked = append(revoked, r)
		}
	}
	switch {
	case len(live) > 1 && !all:
		return nil, &AmbiguousError{Name: t.Arg, Records: live}
	case len(live) > 0:
		return live, nil
	case len(revoked) > 0:
		return revoked, nil
	}
	return nil, &NotFoundError{Arg: t.Arg}
}

// Liftable returns the records whose certificateHold removeFromCRL lifts.
// A name names its certificates on hold (an *AmbiguousError when there are
// several, unless all), whatever else it has, so that lifting a hold does not
// need the serial when the name was re-issued meanwhile. Without any on hold
// it returns what Revocable does, which RevokeRecord then refuses.
func (t *Target) Liftable(all bool) ([]*Record, error) {
	if t.Kind != TargetName {
		return t.Records, nil
	}
	var held []*Record
	for _, r := range t.Records {
		if r.Status == StatusRevoked && r.Reason == revoke.CertificateHold.String() {
			held = append(held, r)
		}
	}
	switch {
	case len(held) > 1 && !all:
		return nil, &AmbiguousError{Name: t.Arg, Records: held, OnHold: true}
	case len(held) > 0:
		return held, nil
	}
	return t.Revocable(all)
}

// Certificate reads the certificate of record r.
func (c *CA) Certificate(r *Record) (*x509.Certificate, error) {
	cert, err := c.readCert(r.CertPath())
	if err != nil {
		return nil, fmt.Errorf("reading certificate %s: %w", r.Serial, err)
	}
	return cert, nil
}

// ResolveCertificate returns the certificate arg names, for commands that
// judge any certificate: a file's own, whether this CA issued it or not,
// else the newest issued certificate of a name or a serial (see Resolve and
// Target.Newest).
func (c *CA) ResolveCertificate(arg string) (*x509.Certificate, error) {
	t, err := c.Resolve(arg)
	if t != nil && t.Cert != nil {
		return t.Cert, nil
	}
	if err != nil {
		return nil, err
	}
	r, err := t.Newest()
	if err != nil {
		return nil, err
	}
	return c.Certificate(r)
}
