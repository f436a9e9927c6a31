package ca

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
	"minica/ca/store"
	"net"
	"net/url"
	"strings"
	"time"
)

// Profile is a kind of leaf certificate.
type Profile = store.Profile

// The leaf profiles.
const (
	// Server: CA:FALSE, digitalSignature (+keyEncipherment for RSA), EKU
	// serverAuth only, at least one DNS or IP SAN.
	Server Profile = "server"
	// Client: CA:FALSE, digitalSignature only, EKU clientAuth only.
	Client Profile = "client"
	// OCSP: a delegated OCSP responder (RFC 6960 section 4.2.2.2) that
	// `minica serve` issues itself: CA:FALSE, digitalSignature only, EKU
	// OCSPSigning only, id-pkix-ocsp-nocheck, short-lived. ParseProfile
	// refuses it: users issue only server and client certificates.
	OCSP Profile = "ocsp"
)

// DefaultOCSPResponderValidity is the lifetime of an OCSP responder
// certificate. It carries id-pkix-ocsp-nocheck, so that nothing can revoke
// it (RFC 6960 section 4.2.2.2.1): a short life bounds the harm of its key.
const DefaultOCSPResponderValidity = 4 * 24 * time.Hour

// oidOCSPNoCheck is id-pkix-ocsp-nocheck (RFC 6960 section 4.2.2.2.1).
var oidOCSPNoCheck = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 48, 1, 5}

// ParseProfile parses a profile name, case-insensitively.
func ParseProfile(s string) (Profile, error) {
	switch p := Profile(strings.ToLower(s)); p {
	case Server, Client:
		return p, nil
	}
	return "", fmt.Errorf("unknown profile %s: want server or client", printable(s))
}

// Backdate is how far before now a leaf's notBefore is set, to absorb clock
// skew between the CA and relying parties.
const Backdate = 5 * time.Minute

// MinValidity is the shortest lifetime of a leaf. The lifetime counts from
// the backdated notBefore, so one of Backdate or less would give a
// certificate that expired before it was signed; a lifetime just above
// Backdate is valid for what is left over (short lifetimes are for tests).
const MinValidity = Backdate + time.Second

// ErrValidityTooShort is returned for a lifetime under MinValidity.
var ErrValidityTooShort = errors.New("validity too short")

// leafValidity returns the notBefore and notAfter of a leaf issued at now
// for lifetime. The lifetime counts from the backdated notBefore, so that
// notAfter - notBefore never exceeds it: a server certificate of 825 days
// must stay within Apple's 825-day limit (support.apple.com/HT210176).
// A lifetime under MinValidity is refused with ErrValidityTooShort.
func leafValidity(now time.Time, lifetime time.Duration) (notBefore, notAfter time.Time, err error) {
	if lifetime < MinValidity {
		return time.Time{}, time.Time{}, fmt.Errorf("%w: %s would leave the certificate already expired when signed (notBefore is backdated %s for clock skew, and the validity counts from it); it must be longer than %s",
			ErrValidityTooShort, FormatDuration(lifetime), FormatDuration(Backdate), FormatDuration(Backdate))
	}
	notBefore = now.Add(-Backdate)
	return notBefore, notBefore.Add(lifetime), nil
}

// Request asks for a leaf certificate. Name is the certificate's name in the
// CA directory; CommonName defaults to Name.
type Request struct {
	Name       string
	Profile    Profile
	CommonName string
	// Subject attributes besides the CN.
	Organization       []string
	OrganizationalUnit []string
	// EmailInSubject also puts the first email into the subject's
	// emailAddress attribute, for DN-based lookups such as Apache's
	// SSL_CLIENT_S_DN_Email.
	EmailInSubject bool

	DNSNames []string
	IPs      []net.IP
	Emails   []string
	URIs     []string

	Validity time.Duration // 0: the CA's default for the profile
	KeyType  KeyType       // "" : the CA's default; ignored with PublicKey
	// PublicKey, when set, is certified instead of a generated key (CSR
	// signing); minica then stores no key.
	PublicKey crypto.PublicKey
	// Force allows a new certificate under a name that already has a valid
	// one; both then stay in the database.
	Force bool
	// RenewalOf is the serial of the certificate this request renews: the
	// new record names it (see CA.RenewalRequest and CA.LinkRenewal).
	RenewalOf string
	// Device is the label of the sign-in device the certificate is for,
	// kept in its record (see DeviceRequest); "" for any other.
	Device string

	// reuseKey, for a renewal that keeps a key minica holds, is certified
	// and stored again instead of a generated key.
	reuseKey crypto.Signer
	// rawSubject, for a renewal, is the predecessor's subject, copied as
	// it was encoded so that the identity cannot drift.
	rawSubject []byte
	// renews, in a batch renewal, is the predecessor's record: IssueBatch
	// links it to the successor once that is durable (see linkTo).
	renews *Record
	// acmeAccount, for IssueACME, is the ACME account kept in the record.
	acmeAccount string
	// alsoClientAuth adds clientAuth to a server certificate's EKU (an
	// ACME binding's Client).
	alsoClientAuth bool
	// noCommonName leaves the subject empty (an ACME order none of whose
	// names fits in a common name); the names are in the SAN.
	noCommonName bool
}

// normalize validates every field of r and fills defaults; it returns the
// parsed URIs. It runs before any key is generated or file written.
func (r *Request) normalize(s Settings) ([]*url.URL, error) {
	if err := ValidateName(r.Name); err != nil {
		return nil, err
	}
	if r.Profile != OCSP {
		if _, err := ParseProfile(string(r.Profile)); err != nil {
			return nil, err
		}
	}
	if r.noCommonName {
		r.CommonName = ""
	} else {
		if r.CommonName == "" {
			r.CommonName = r.Name
		}
		if err := ValidateText("common name", r.CommonName); err != nil {
			return nil, err
		}
	}
	for _, v := range r.Organization {
		if err := ValidateText("organization", v); err != nil {
			return nil, err
		}
	}
	for _, v := range r.OrganizationalUnit {
		if err := ValidateText("organizational unit", v); err != nil {
			return nil, err
		}
	}
	for _, e := range r.Emails {
		if err := ValidateEmail(e); err != nil {
			return nil, err
		}
	}
	for _, d := range r.DNSNames {
		if err := ValidateDNSName(d); err != nil {
			return nil, err
		}
	}
	uris := make([]*url.URL, 0, len(r.URIs))
	for _, raw := range r.URIs {
		u, err := ValidateURI(raw)
		if err != nil {
			return nil, err
		}
		uris = append(uris, u)
	}
	if r.Profile == Server && len(r.DNSNames) == 0 && len(r.IPs) == 0 {
		if !IsHostName(r.Name) {
			return nil, fmt.Errorf("a server certificate needs at least one DNS name or IP address, and name %q is not a host name", r.Name)
		}
		r.DNSNames = []string{r.Name}
	}
	if r.Validity == 0 {
		switch r.Profile {
		case Server:
			r.Validity = time.Duration(s.ServerValidity)
		case OCSP:
			r.Validity = DefaultOCSPResponderValidity
		default:
			r.Validity = time.Duration(s.ClientValidity)
		}
	}
	if r.KeyType == "" {
		r.KeyType = s.KeyType
	}
	return uris, nil
}

// template builds the certificate template of a normalized request; the
// CRL and OCSP URLs of settings s go into server and client leaves.
func (r *Request) template(serial *big.Int, pub crypto.PublicKey, uris []*url.URL, notBefore, notAfter time.Time, s Settings) (*x509.Certificate, error) {
	ski, err := subjectKeyID(pub)
	if err != nil {
		return nil, err
	}
	subject := pkix.Name{
		CommonName:         r.CommonName,
		Organization:       r.Organization,
		OrganizationalUnit: r.OrganizationalUnit,
	}
	if r.Profile == Client && r.EmailInSubject && len(r.Emails) > 0 {
		// emailAddress is an IA5String (RFC 5280 appendix A.1); Go would
		// write a UTF8String, which OpenSSL refuses under name constraints.
		subject.ExtraNames = append(subject.ExtraNames, pkix.AttributeTypeAndValue{
			Type: oidEmailAddress, Value: asn1.RawValue{Tag: asn1.TagIA5String, Bytes: []byte(r.Emails[0])},
		})
	}
	t := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               subject,
		RawSubject:            r.rawSubject,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		BasicConstraintsValid: true,
		IsCA:                  false,
		SubjectKeyId:          ski,
		DNSNames:              r.DNSNames,
		IPAddresses:           r.IPs,
		EmailAddresses:        r.Emails,
		URIs:                  uris,
		KeyUsage:              x509.KeyUsageDigitalSignature,
	}
	if s.CRLURL != "" && r.Profile != OCSP {
		t.CRLDistributionPoints = []string{s.CRLURL}
	}
	if s.OCSPURL != "" && r.Profile != OCSP {
		t.OCSPServer = []string{s.OCSPURL}
	}
	switch r.Profile {
	case Server:
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		if r.alsoClientAuth {
			t.ExtKeyUsage = append(t.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		}
		if _, ok := pub.(*rsa.PublicKey); ok {
			t.KeyUsage |= x509.KeyUsageKeyEncipherment
		}
	case Client:
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	case OCSP:
		// Relying parties trust a responder that nothing can revoke, so
		// it carries neither a CRL point nor an OCSP URL of its own.
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageOCSPSigning}
		t.ExtraExtensions = append(t.ExtraExtensions, pkix.Extension{Id: oidOCSPNoCheck, Value: asn1.NullBytes})
	}
	return t, nil
}

// oidEmailAddress is PKCS #9's emailAddress attribute (RFC 2985).
var oidEmailAddress = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}

// subjectKeyID derives a key identifier by RFC 7093 section 2 method 1: the
// leftmost 160 bits of the SHA-256 hash of the subjectPublicKey bits.
func subjectKeyID(pub crypto.PublicKey) ([]byte, error) {
	spki, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encoding public key: %w", err)
	}
	var info struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if _, err := asn1.Unmarshal(spki, &info); err != nil {
		return nil, fmt.Errorf("decoding public key: %w", err)
	}
	sum := sha256.Sum256(info.PublicKey.Bytes)
	return sum[:20], nil
}

// profileOf tells a certificate's profile from its EKU.
func profileOf(cert *x509.Certificate) Profile {
	if cert.IsCA {
		return Intermediate
	}
	for _, u := range cert.ExtKeyUsage {
		switch u {
		case x509.ExtKeyUsageServerAuth:
			return Server
		case x509.ExtKeyUsageOCSPSigning:
			return OCSP
		}
	}
	return Client
}
