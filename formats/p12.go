package formats

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"go.step.sm/crypto/randutil"
	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// P12Profile selects the algorithms of a PKCS#12 bundle.
type P12Profile int

// The PKCS#12 profiles. There is deliberately no RC2, PBMAC1 or
// password-less profile: OpenSSL 3 cannot read RC2 without -legacy, OpenSSL
// 3.0, NSS and Java 17 reject PBMAC1, and NSS and Java cannot use key bundles
// without a password.
const (
	// P12Modern is PBES2 (PBKDF2-HMAC-SHA-256, AES-256-CBC) with an
	// HMAC-SHA-256 MAC: OpenSSL 1.1.1+, Java 12+, NSS, Windows 10 1709+ and
	// Windows Server 2019+.
	P12Modern P12Profile = iota
	// P12Compat is pbeWithSHAAnd3-KeyTripleDES-CBC with an HMAC-SHA-1 MAC,
	// for macOS/iOS Keychain, Android, Windows 8.1 and older and Windows
	// Server 2016 and older.
	P12Compat
)

// ParseP12Profile parses "modern" or "compat", in any case.
func ParseP12Profile(s string) (P12Profile, error) {
	switch strings.ToLower(s) {
	case "modern":
		return P12Modern, nil
	case "compat":
		return P12Compat, nil
	}
	return 0, fmt.Errorf("unknown PKCS#12 profile %q (want modern or compat)", s)
}

// String returns "modern" or "compat".
func (p P12Profile) String() string {
	switch p {
	case P12Modern:
		return "modern"
	case P12Compat:
		return "compat"
	}
	return fmt.Sprintf("P12Profile(%d)", int(p))
}

// Password errors of EncodeP12. They match ErrBadP12Password.
var (
	ErrBadP12Password   = errors.New("unusable PKCS#12 password")
	ErrEmptyP12Password = fmt.Errorf("%w: the password must not be empty", ErrBadP12Password)
	ErrNonASCIIPassword = fmt.Errorf("%w: the password must be ASCII (Java cannot read PKCS#12 files with non-ASCII passwords)", ErrBadP12Password)
	ErrControlPassword  = fmt.Errorf("%w: the password must not hold control characters", ErrBadP12Password)
)

// CheckP12Password returns nil if password can protect a bundle that every
// peer reads: not empty, printable ASCII only.
func CheckP12Password(password string) error {
	if password == "" {
		return ErrEmptyP12Password
	}
	for _, c := range []byte(password) {
		switch {
		case c >= 0x80:
			return ErrNonASCIIPassword
		case c < 0x20 || c == 0x7f:
			return ErrControlPassword
		}
	}
	return nil
}

// P12Encoder encodes PKCS#12 bundles with a profile. Iterations, when
// non-zero, replaces the profile's KDF and MAC iteration counts: tests
// lower it, nothing else should. Name is the key's friendlyName, which
// Java's keytool shows as the alias and NSS as the nickname; empty means the
// leaf's common name, or its serial in hex when it has none.
type P12Encoder struct {
	Profile    P12Profile
	Iterations int
	Name       string
}

// EncodeP12 is P12Encoder{Profile: p}.Encode.
func EncodeP12(p P12Profile, key crypto.PrivateKey, leaf *x509.Certificate, chain []*x509.Certificate, password string) ([]byte, error) {
	return P12Encoder{Profile: p}.Encode(key, leaf, chain, password)
}

// Encode returns a DER PKCS#12 bundle holding key, leaf and chain (CA
// certificates, leaf's issuer first), protected by password, which must pass
// CheckP12Password. key must match leaf.
func (e P12Encoder) Encode(key crypto.PrivateKey, leaf *x509.Certificate, chain []*x509.Certificate, password string) ([]byte, error) {
	if err := CheckP12Password(password); err != nil {
		return nil, err
	}
	if leaf == nil {
		return nil, errors.New("encoding PKCS#12: no certificate given")
	}
	if err := KeyMatchesCertificate(key, leaf); err != nil {
		return nil, fmt.Errorf("encoding PKCS#12: %w", err)
	}
	var enc *pkcs12.Encoder
	switch e.Profile {
	case P12Modern:
		enc = pkcs12.Modern2023
	case P12Compat:
		enc = pkcs12.LegacyDES
	default:
		return nil, fmt.Errorf("encoding PKCS#12: unknown profile %d", int(e.Profile))
	}
	if e.Iterations < 0 {
		return nil, fmt.Errorf("encoding PKCS#12: negative iteration count %d", e.Iterations)
	}
	if e.Iterations > MaxIterations {
		return nil, fmt.Errorf("encoding PKCS#12: %d iterations, above minica's limit of %d", e.Iterations, MaxIterations)
	}
	if e.Iterations > 0 {
		enc = enc.WithIterations(e.Iterations)
	}
	der, err := enc.Encode(key, leaf, chain, password)
	if err != nil {
		return nil, fmt.Errorf("encoding PKCS#12: %w", err)
	}
	name := e.Name
	if name == "" {
		name = leaf.Subject.CommonName
	}
	if name == "" {
		name = fmt.Sprintf("%x", leaf.SerialNumber)
	}
	return nameBundle(der, name, password)
}

// passwordChars are the characters of a generated password: letters and
// digits without those a person reading it could take for another (0 and
// O and o, 1 and l and I).
const passwordChars = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz"

// GeneratePassword returns a fresh 24-character password of passwordChars
// from the CSPRNG (about 139 bits), safe to type, paste and quote
// anywhere, and to copy by eye.
func GeneratePassword() (string, error) {
	pw, err := randutil.String(24, passwordChars)
	if err != nil {
		return "", fmt.Errorf("generating password: %w", err)
	}
	return pw, nil
}
