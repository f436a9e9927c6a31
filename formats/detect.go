package formats

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"fmt"
)

// Object is what Detect found in a file. Exactly the fields of its Kind are
// set: Certificates for KindCertificate, CSR, CRL, Key, PublicKey, PKCS12
// (the raw DER, decoded later with a password), and Key plus Certificates for
// KindBundle.
type Object struct {
	Kind         Kind
	Encoding     Encoding
	Certificates []*x509.Certificate
	CSR          *x509.CertificateRequest
	CRL          *x509.RevocationList
	Key          *KeyData
	PublicKey    *PublicKeyData
	PKCS12       []byte
}

// PublicKeyData is a public key and the structure it was stored in (PKIX or
// PKCS1).
type PublicKeyData struct {
	Format KeyFormat
	Key    crypto.PublicKey
}

// Detect recognizes data as PEM or DER and parses the object it holds:
// certificates (one or a chain), a CSR, a CRL, a private key (PKCS#8 plain or
// encrypted, SEC1, PKCS#1, legacy encrypted PEM), a public key, a PKCS#12
// bundle, or a PEM bundle of one private key and certificates. Encrypted keys
// and PKCS#12 bundles are recognized without a password.
//
// Errors match ErrEmpty, ErrTruncated, ErrMalformed or ErrUnknownFormat, and
// say what the input looked like.
func Detect(data []byte) (*Object, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, ErrEmpty
	}
	if bytes.Contains(data, pemBegin) {
		return detectPEM(data)
	}
	if data[0] == 0x30 {
		return detectDER(data)
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownFormat, sniff(data))
}

// String describes the object in plain words, e.g. "PEM certificate chain
// (3 certificates)" or "DER PKCS#8 private key (ECDSA P-256)".
func (o *Object) String() string {
	enc := o.Encoding.String()
	switch o.Kind {
	case KindCertificate:
		if n := len(o.Certificates); n > 1 {
			return fmt.Sprintf("%s certificate chain (%d certificates)", enc, n)
		}
		return enc + " certificate"
	case KindCSR:
		return enc + " certificate request"
	case KindCRL:
		return fmt.Sprintf("%s CRL (%s)", enc, plural(len(o.CRL.RevokedCertificateEntries), "entry", "entries"))
	case KindPrivateKey:
		return enc + " " + o.Key.String()
	case KindPublicKey:
		return fmt.Sprintf("%s public key (%s)", enc, KeyType(o.PublicKey.Key))
	case KindPKCS12:
		return "PKCS#12 bundle"
	case KindBundle:
		return fmt.Sprintf("%s bundle: %s and %s", enc, o.Key.String(),
			plural(len(o.Certificates), "certificate", "certificates"))
	}
	return enc + " " + o.Kind.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
