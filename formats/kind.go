package formats

import (
	"fmt"
	"strings"
)

// Kind is the kind of object a file holds.
type Kind int

// The kinds Detect recognizes.
const (
	KindUnknown     Kind = iota
	KindCertificate      // one certificate, or several (a chain)
	KindCSR              // a PKCS#10 certificate request
	KindCRL              // an X.509 v1 or v2 CRL
	KindPrivateKey       // a private key, possibly encrypted
	KindPublicKey        // a SubjectPublicKeyInfo or PKCS#1 public key
	KindPKCS12           // a PKCS#12 / PFX bundle
	KindBundle           // a PEM file with a private key and certificates
)

var kindNames = map[Kind]string{
	KindUnknown:     "unknown object",
	KindCertificate: "certificate",
	KindCSR:         "certificate request",
	KindCRL:         "CRL",
	KindPrivateKey:  "private key",
	KindPublicKey:   "public key",
	KindPKCS12:      "PKCS#12 bundle",
	KindBundle:      "key and certificate bundle",
}

// String returns the kind in plain words, e.g. "certificate request".
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

func (k Kind) withArticle() string {
	s := k.String()
	switch k {
	case KindUnknown:
		return "an " + s
	}
	return "a " + s
}

// Encoding is how an object is written: PEM text or raw DER.
type Encoding int

// The encodings.
const (
	PEM Encoding = iota + 1
	DER
)

// String returns "PEM" or "DER".
func (e Encoding) String() string {
	switch e {
	case PEM:
		return "PEM"
	case DER:
		return "DER"
	}
	return fmt.Sprintf("Encoding(%d)", int(e))
}

// ParseEncoding parses "pem" or "der", in any case.
func ParseEncoding(s string) (Encoding, error) {
	switch strings.ToLower(s) {
	case "pem":
		return PEM, nil
	case "der":
		return DER, nil
	}
	return 0, fmt.Errorf("unknown encoding %q (want pem or der)", s)
}

// KeyFormat is the ASN.1 structure a key is stored in.
type KeyFormat int

// The key formats. PKCS8Encrypted is PKCS#8 EncryptedPrivateKeyInfo;
// LegacyEncrypted is a PKCS#1 or SEC1 PEM block with "Proc-Type: 4,ENCRYPTED"
// headers (read, never written). PKIX is a SubjectPublicKeyInfo.
const (
	PKCS8 KeyFormat = iota + 1
	PKCS8Encrypted
	SEC1
	PKCS1
	LegacyEncrypted
	PKIX
)

var keyFormatNames = map[KeyFormat]string{
	PKCS8:           "PKCS#8",
	PKCS8Encrypted:  "encrypted PKCS#8",
	SEC1:            "SEC1",
	PKCS1:           "PKCS#1",
	LegacyEncrypted: "legacy encrypted PEM",
	PKIX:            "SubjectPublicKeyInfo",
}

// String returns the format's usual name, e.g. "PKCS#8" or "SEC1".
func (f KeyFormat) String() string {
	if s, ok := keyFormatNames[f]; ok {
		return s
	}
	return fmt.Sprintf("KeyFormat(%d)", int(f))
}

// ParseKeyFormat parses "pkcs8", "sec1" or "pkcs1", in any case.
func ParseKeyFormat(s string) (KeyFormat, error) {
	switch strings.ToLower(s) {
	case "pkcs8":
		return PKCS8, nil
	case "sec1":
		return SEC1, nil
	case "pkcs1":
		return PKCS1, nil
	}
	return 0, fmt.Errorf("unknown key format %q (want pkcs8, sec1 or pkcs1)", s)
}

// Encrypted reports whether keys in this format need a password.
func (f KeyFormat) Encrypted() bool {
	return f == PKCS8Encrypted || f == LegacyEncrypted
}
