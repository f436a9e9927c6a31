package ca

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"minica/formats"
)

// Errors of renewal, matched with errors.Is. Each comes wrapped in a
// message that names the certificate.
var (
	// ErrNotRenewable: the serial never became a certificate (pending or
	// void).
	ErrNotRenewable = errors.New("not an issued certificate")
	// ErrRenewRevoked: a revoked certificate is never renewed; its holder
	// needs a new certificate, issued after a person has looked at why.
	ErrRenewRevoked = errors.New("a revoked certificate cannot be renewed")
	// ErrRenewExpired: the certificate expired and RenewOptions.AllowExpired
	// was not set.
	ErrRenewExpired = errors.New("an expired certificate cannot be renewed")
	// ErrAlreadyRenewed is matched by *AlreadyRenewedError.
	ErrAlreadyRenewed = errors.New("certificate already renewed")
	// ErrNotRenewal is matched by *IdentityError: the request asks for
	// another identity, key usage or CA:TRUE.
	ErrNotRenewal = errors.New("changing the identity is not a renewal")
	// ErrSameKey: the renewal request carries the predecessor's key and
	// RenewOptions.ReuseKey was not set.
	ErrSameKey = errors.New("the request keeps the old key")
	// ErrNoRenewalKey: the predecessor's key is not held by minica (it came
	// from sign), so a renewal needs a CSR or ReuseKey.
	ErrNoRenewalKey = errors.New("minica does not hold the key of this certificate")
)

// RenewOptions says how CA.Renew makes a successor. The zero value renews
// a certificate minica holds the key of with a new key of the same type,
// for the predecessor's lifetime.
type RenewOptions struct {
	// CSR, when set, supplies the successor's public key; it must ask for
	// the predecessor's identity (see CheckRenewalCSR). The successor's
	// key is then not stored.
	CSR *x509.CertificateRequest
	// ReuseKey certifies the predecessor's key again: the one minica holds,
	// or, for a certificate from sign, the public key of the certificate.
	// With CSR it allows a CSR that carries the old key.
	ReuseKey bool
	// KeyType of the new key; "" keeps the predecessor's.
	KeyType KeyType
	// Validity of the successor; 0 keeps the predecessor's lifetime.
	Validity time.Duration
	// Force renews a certificate that already has a successor (both
	// successors then stay valid).
	Force bool
	// AllowExpired renews a certificate past its notAfter. The command line
	// allows it (the operator knows who holds it); online renewal, where
	// the certificate is the proof of identity, does not.
	AllowExpired bool
	// Presented, when set, is the predecessor's certificate as its holder
	// presented it (online renewal): used in place of the file in certs/
	// when it is the record's certificate (same serial and SHA-256, signed
	// by this CA), so that a replica on another host, where the file is
	// not, renews it too.
	Presented *x509.Certificate
	// MinInterval, when set, refuses (RenewedRecentlyError) a certificate
	// with a successor issued less than MinInterval ago. Renew checks it
	// in the store under the caller's lock, so that it holds across every
	// process of the CA (serve's replicas).
	MinInterval time.Duration
}

// Renewed is the result of CA.Renew.
type Renewed struct {
	*Issued
	// Predecessor is the renewed certificate's record, with RenewedBy set.
	Predecessor *Record
	// Expired is set when the predecessor had expired (AllowExpired).
	Expired bool
}

// AlreadyRenewedError is returned for a certificate that has a successor,
// without RenewOptions.Force. It matches ErrAlreadyRenewed.
type AlreadyRenewedError struct {
	Record    *Record
	Successor string // serial
}

func (e *AlreadyRenewedError) Error() string {
	return fmt.Sprintf("certificate %q (serial %s) was already renewed by serial %s", e.Record.Name, e.Record.Serial, e.Successor)
}

// Unwrap makes errors.Is(err, ErrAlreadyRenewed) true.
func (e *AlreadyRenewedError) Unwrap() error { return ErrAlreadyRenewed }

// IdentityError is returned when a renewal request asks for something the
// predecessor does not have. It matches ErrNotRenewal.
type IdentityError struct {
	Serial string // the predecessor's
	Field  string // "subject", "SANs", "extKeyUsage", "keyUsage", "basicConstraints"
	Want   string // what the predecessor has
	Got    string // what the request asks for
}

func (e *IdentityError) Error() string {
	return fmt.Sprintf("the request asks for %s %s, but serial %s has %s: %v", e.Field, e.Got, e.Serial, e.Want, ErrNotRenewal)
}

// Unwrap makes errors.Is(err, ErrNotRenewal) true.
func (e *IdentityError) Unwrap() error { return ErrNotRenewal }

// CheckRenewable tells whether the certificate of rec may be renewed at
// now under opts: it must be issued, not revoked, not expired (unless
// AllowExpired) and not renewed already (unless Force). It reads nothing.
func CheckRenewable(rec *Record, now time.Time, opts RenewOptions) error {
	switch st := rec.StatusAt(now); st {
	case StatusPending, StatusVoid:
		return fmt.Errorf("serial %s: %w (status %s)", rec.Serial, ErrNotRenewable, st)
	case StatusRevoked:
		return fmt.Errorf("certificate %q (serial %s) was revoked on %s (%s): %w",
			rec.Name, rec.Serial, rec.RevokedAt.UTC().Format(time.RFC3339), rec.Reason, ErrRenewRevoked)
	case StatusExpired:
		if !opts.AllowExpired {
			return fmt.Errorf("certificate %q (serial %s) expired on %s: %w",
				rec.Name, rec.Serial, rec.NotAfter.UTC().Format(time.RFC3339), ErrRenewExpired)
		}
	}
	if rec.RenewedBy != "" && !opts.Force {
		return &AlreadyRenewedError{Record: rec, Successor: rec.RenewedBy}
	}
	return nil
}

// CheckRenewalCSR tells whether csr asks to renew old, a certificate of
// profile p: its signature must hold, and whatever identity it names must
// be old's: the successor always gets old's subject and SANs, and the CSR
// may name them, part of them or nothing, never more (see subjectWithin). It must
// not ask for CA:TRUE, an extended key usage other than the profile's or a
// key usage the profile does not give. Failures are *IdentityError, or
// the signature error.
func CheckRenewalCSR(old *x509.Certificate, p Profile, csr *x509.CertificateRequest) error {
	if err := csr.CheckSignature(); err != nil {
		return fmt.Errorf("checking the CSR's signature: %w", err)
	}
	if err := CheckPublicKey(csr.PublicKey); err != nil {
		return err
	}
	serial := SerialHex(old.SerialNumber)
	refuse := func(field, want, got string) error {
		return &IdentityError{Serial: serial, Field: field, Want: want, Got: got}
	}
	if !subjectWithin(old, p, csr) {
		want, _ := formats.DistinguishedName(old.RawSubject)
		got, err := formats.DistinguishedName(csr.RawSubject)
		if err != nil {
			return fmt.Errorf("reading the CSR's subject: %w", err)
		}
		return refuse("subject", quoteDN(want), quoteDN(got))
	}
	if want, got := SANs(old), csrSANList(csr); !within(got, want) {
		return refuse("SANs", sanList(want), sanList(got))
	}
	for _, ext := range csr.Extensions {
		switch {
		case ext.Id.Equal(oidBasicConstraints) && requestsCA(ext.Value):
			return refuse("basicConstraints", "CA:FALSE", "CA:TRUE")
		case ext.Id.Equal(oidExtKeyUsage):
			var ekus []asn1.ObjectIdentifier
			if _, err := asn1.Unmarshal(ext.Value, &ekus); err != nil {
				return fmt.Errorf("reading the CSR's extKeyUsage: %w", err)
			}
			want := ekuOID(p)
			if len(ekus) != 1 || !ekus[0].Equal(want) {
				return refuse("extKeyUsage", ekuNames([]asn1.ObjectIdentifier{want}), ekuNames(ekus))
			}
		case ext.Id.Equal(oidKeyUsage):
			var bits asn1.BitString
			if _, err := asn1.Unmarshal(ext.Value, &bits); err != nil {
				return fmt.Errorf("reading the CSR's keyUsage: %w", err)
			}
			allowed := profileKeyUsage(p, csr.PublicKey)
			for i := range bits.BitLength {
				if bits.At(i) == 1 && allowed&(1<<i) == 0 {
					return refuse("keyUsage", keyUsageNames(allowed), keyUsageNames(bitsUsage(bits)))
				}
			}
		}
	}
	return nil
}

// subjectWithin reports whether every attribute of csr's subject is one
// of old's. For a server, a CN may also be one of old's DNS names: sign
// drops such a CN (a server's CN is its name), and CSR tools put the host
// name there.
func subjectWithin(old *x509.Certificate, p Profile, csr *x509.CertificateRequest) bool {
	have := make([]string, 0, len(old.Subject.Names))
	for _, atv := range old.Subject.Names {
		have = append(have, atv.Type.String()+"="+fmt.Sprint(atv.Value))
	}
	for _, atv := range csr.Subject.Names {
		v := fmt.Sprint(atv.Value)
		if i := slices.Index(have, atv.Type.String()+"="+v); i >= 0 {
			have = slices.Delete(have, i, i+1)
			continue
		}
		if p == Server && atv.Type.Equal(oidCommonName) && slices.Contains(old.DNSNames, v) {
			continue
		}
		return false
	}
	return true
}

// RenewalRequest checks that rec may be renewed under opts (see
// CheckRenewable, CheckRenewalCSR) and returns the request that issues its
// successor: the same name, profile, subject (copied as encoded) and SANs,
// RenewalOf set and Force set (the predecessor stays valid). It reads the
// predecessor's certificate, and its key with ReuseKey; it writes nothing.
// Batch renewal issues such requests and links each result with
// LinkRenewal; Renew does both for one.
func (c *CA) RenewalRequest(rec *Record, opts RenewOptions) (Request, error) {
	now := c.Now().UTC()
	if err := CheckRenewable(rec, now, opts); err != nil {
		return Request{}, err
	}
	// The old key is read only to be kept: a new key needs the certificate alone.
	var (
		old    *x509.Certificate
		oldKey crypto.Signer
		err    error
	)
	if opts.ReuseKey && opts.CSR == nil && rec.HasKey {
		leaf, err := c.LoadLeaf(rec)
		if err != nil {
			return Request{}, err
		}
		old, oldKey = leaf.Cert, leaf.Key
	} else if presentedIs(opts.Presented, rec, c.Cert) {
		old = opts.Presented
	} else if old, err = c.Certificate(rec); err != nil {
		return Request{}, err
	}
	req := Request{
		Name:               rec.Name,
		Profile:            rec.Profile,
		CommonName:         old.Subject.CommonName,
		Organization:       old.Subject.Organization,
		OrganizationalUnit: old.Subject.OrganizationalUnit,
		DNSNames:           old.DNSNames,
		IPs:                old.IPAddresses,
		Emails:             old.EmailAddresses,
		Validity:           opts.Validity,
		KeyType:            opts.KeyType,
		Force:              true,
		RenewalOf:          rec.Serial,
		Device:             rec.Device,
		rawSubject:         old.RawSubject,
	}
	if req.CommonName == "" {
		req.CommonName = rec.Name // only Request's default: rawSubject decides
	}
	for _, u := range old.URIs {
		req.URIs = append(req.URIs, u.String())
	}
	if req.Validity == 0 {
		req.Validity = old.NotAfter.Sub(old.NotBefore)
	}
	if req.KeyType == "" {
		req.KeyType = keyTypeOf(old.PublicKey)
	}
	switch {
	case opts.CSR != nil:
		if err := CheckRenewalCSR(old, rec.Profile, opts.CSR); err != nil {
			return Request{}, err
		}
		if samePublicKey(opts.CSR.PublicKey, old.PublicKey) && !opts.ReuseKey {
			return Request{}, fmt.Errorf("the CSR carries the key of serial %s: %w", rec.Serial, ErrSameKey)
		}
		req.PublicKey = opts.CSR.PublicKey
	case opts.ReuseKey && oldKey != nil:
		req.reuseKey = oldKey
	case opts.ReuseKey:
		req.PublicKey = old.PublicKey
	case !rec.HasKey:
		return Request{}, fmt.Errorf("certificate %q (serial %s) was signed from a CSR: %w", rec.Name, rec.Serial, ErrNoRenewalKey)
	}
	if _, _, err := c.validity(now.Truncate(time.Second), req.Validity); err != nil {
		return Request{}, fmt.Errorf("renewing %q (serial %s): %w", rec.Name, rec.Serial, err)
	}
	return req, nil
}

// Renew issues the successor of the certificate of rec, with signer (the
// CA key), and links the two records both ways (Record.RenewalOf,
// Record.RenewedBy). The caller must hold the lock (see Lock). The
// predecessor stays valid until it expires; revoking it is the caller's
// choice. On a refusal nothing is written.
func (c *CA) Renew(signer crypto.Signer, rec *Record, opts RenewOptions) (*Renewed, error) {
	if err := c.checkRenewInterval(rec, c.Now(), opts.MinInterval); err != nil {
		return nil, err
	}
	req, err := c.RenewalRequest(rec, opts)
	if err != nil {
		return nil, err
	}
	expired := rec.StatusAt(c.Now()) == StatusExpired
	issued, err := c.Issue(signer, req)
	if err != nil {
		return nil, fmt.Errorf("renewing %q (serial %s): %w", rec.Name, rec.Serial, err)
	}
	pred, err := c.LinkRenewal(issued.Record)
	if err != nil {
		return nil, err
	}
	*rec = *pred
	return &Renewed{Issued: issued, Predecessor: rec, Expired: expired}, nil
}

// LinkRenewal records in the predecessor of successor (named by its
// RenewalOf) that it was renewed by successor, and returns the updated
// predecessor. The caller must hold the lock. The new state is appended to
// the record file without a sync, as a completed record is: after a power
// loss that undoes it, Check restores it from the successor's RenewalOf.
func (c *CA) LinkRenewal(successor *Record) (*Record, error) {
	serial, err := ParseSerial(successor.RenewalOf)
	if err != nil {
		return nil, fmt.Errorf("serial %s renews nothing: %w", successor.Serial, err)
	}
	pred, err := c.Record(serial)
	if err != nil {
		return nil, fmt.Errorf("linking serial %s to its predecessor: %w", successor.Serial, err)
	}
	if err := c.linkTo(pred, successor); err != nil {
		return nil, err
	}
	return pred, nil
}

// linkTo is LinkRenewal for a predecessor the caller read under the lock
// it holds; pred is updated in place.
func (c *CA) linkTo(pred, successor *Record) error {
	if pred.Serial != successor.RenewalOf {
		return fmt.Errorf("serial %s renews serial %s, not %s", successor.Serial, successor.RenewalOf, pred.Serial)
	}
	pred.RenewedBy = successor.Serial
	if err := c.appendRecord(pred); err != nil {
		return fmt.Errorf("%w: issued serial %s, but linking it to its predecessor %s failed: %w", ErrIssuanceIncomplete, successor.Serial, pred.Serial, err)
	}
	return nil
}

// appendRecord records r's new state (the renewal link) as cheaply as the
// store can: Check restores it.
func (c *CA) appendRecord(r *Record) error { return c.db.UpdateRecord(r) }

// Renewable returns the record that renewing the target renews: for a
// serial or a file its one record; for a name the newest valid
// certificate that has no successor, else the newest issued one (which
// CheckRenewable may then refuse, saying why).
func (t *Target) Renewable(now time.Time) (*Record, error) {
	if t.Kind != TargetName {
		if len(t.Records) == 0 {
			return nil, &UnusableError{Arg: t.Arg}
		}
		return t.Records[0], nil
	}
	for i := len(t.Records) - 1; i >= 0; i-- {
		if r := t.Records[i]; r.StatusAt(now) == StatusValid && r.RenewedBy == "" {
			return r, nil
		}
	}
	return t.Newest()
}

// DueForRenewal tells whether renew --expiring within renews rec at now:
// valid, without a successor, and expiring within the window.
func DueForRenewal(rec *Record, now time.Time, within time.Duration) bool {
	return rec.StatusAt(now) == StatusValid && rec.RenewedBy == "" && !rec.NotAfter.After(now.Add(within)) &&
		(rec.Profile == Server || rec.Profile == Client)
}

var (
	oidCommonName  = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidKeyUsage    = asn1.ObjectIdentifier{2, 5, 29, 15}
	oidExtKeyUsage = asn1.ObjectIdentifier{2, 5, 29, 37}
	oidServerAuth  = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 1}
	oidClientAuth  = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 2}
	oidOCSPSigning = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 9}
)

func ekuOID(p Profile) asn1.ObjectIdentifier {
	switch p {
	case Server:
		return oidServerAuth
	case OCSP:
		return oidOCSPSigning
	}
	return oidClientAuth
}

func ekuNames(ids []asn1.ObjectIdentifier) string {
	names := make([]string, len(ids))
	for i, id := range ids {
		switch {
		case id.Equal(oidServerAuth):
			names[i] = "serverAuth"
		case id.Equal(oidClientAuth):
			names[i] = "clientAuth"
		case id.Equal(oidOCSPSigning):
			names[i] = "OCSPSigning"
		default:
			names[i] = id.String()
		}
	}
	return strings.Join(names, ", ")
}

// profileKeyUsage is the key usage template gives a profile's leaf.
func profileKeyUsage(p Profile, pub crypto.PublicKey) x509.KeyUsage {
	ku := x509.KeyUsageDigitalSignature
	if _, ok := pub.(*rsa.PublicKey); ok && p == Server {
		ku |= x509.KeyUsageKeyEncipherment
	}
	return ku
}

// bitsUsage turns a keyUsage BIT STRING into x509.KeyUsage (bit 0 first).
func bitsUsage(bits asn1.BitString) x509.KeyUsage {
	var ku x509.KeyUsage
	for i := range min(bits.BitLength, 9) {
		if bits.At(i) == 1 {
			ku |= 1 << i
		}
	}
	return ku
}

var keyUsageBitNames = []string{"digitalSignature", "contentCommitment", "keyEncipherment", "dataEncipherment",
	"keyAgreement", "keyCertSign", "cRLSign", "encipherOnly", "decipherOnly"}

func keyUsageNames(ku x509.KeyUsage) string {
	var names []string
	for i, n := range keyUsageBitNames {
		if ku&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}

// csrSANList lists a CSR's SANs the way SANs lists a certificate's.
func csrSANList(csr *x509.CertificateRequest) []string {
	return SANs(&x509.Certificate{DNSNames: csr.DNSNames, IPAddresses: csr.IPAddresses,
		EmailAddresses: csr.EmailAddresses, URIs: csr.URIs})
}

// within reports whether every element of a is in b.
func within(a, b []string) bool {
	for _, v := range a {
		if !slices.Contains(b, v) {
			return false
		}
	}
	return true
}

func sanList(sans []string) string {
	if len(sans) == 0 {
		return "(none)"
	}
	return strings.Join(sans, ", ")
}

func quoteDN(dn string) string { return fmt.Sprintf("%q", dn) }

func samePublicKey(a, b crypto.PublicKey) bool {
	da, errA := x509.MarshalPKIXPublicKey(a)
	db, errB := x509.MarshalPKIXPublicKey(b)
	return errA == nil && errB == nil && bytes.Equal(da, db)
}

// keyTypeOf names the KeyType of a public key; "" (the CA's default) for
// one minica does not generate.
func keyTypeOf(pub crypto.PublicKey) KeyType {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return ECDSAP256
		case elliptic.P384():
			return ECDSAP384
		}
	case *rsa.PublicKey:
		switch k.N.BitLen() {
		case 2048:
			return RSA2048
		case 3072:
			return RSA3072
		case 4096:
			return RSA4096
		}
	case ed25519.PublicKey:
		return Ed25519
	}
	return ""
}

// presentedIs reports whether cert is rec's certificate, signed by ca.
func presentedIs(cert *x509.Certificate, rec *Record, ca *x509.Certificate) bool {
	if cert == nil || SerialHex(cert.SerialNumber) != rec.Serial {
		return false
	}
	sum := sha256.Sum256(cert.Raw)
	return hex.EncodeToString(sum[:]) == rec.Fingerprint && cert.CheckSignatureFrom(ca) == nil
}
