package formats

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"

	"golang.org/x/crypto/cryptobyte"
	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// DecodeP12 returns the private key, the leaf certificate (the one matching
// the key, wherever it sits in the bundle) and the other certificates of a
// DER PKCS#12 bundle. A wrong password gives ErrWrongPassword; input that is
// not a complete PKCS#12 structure gives ErrTruncated or ErrMalformed, and
// one asking for more than MaxIterations an *IterationsError, before any
// key derivation.
func DecodeP12(data []byte, password string) (key crypto.PrivateKey, leaf *x509.Certificate, chain []*x509.Certificate, err error) {
	if len(data) == 0 {
		return nil, nil, nil, ErrEmpty
	}
	der, err := normalizeDER(data)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("decoding PKCS#12: %w", err)
	}
	if len(der) != len(data) || checkDER(data) != nil {
		// The MAC covers the BER bytes of the contents and go-pkcs12 parses
		// them as DER: neither survives a conversion.
		return nil, nil, nil, fmt.Errorf("decoding PKCS#12: %w: the bundle is BER-encoded, as NSS and Firefox export them (re-export it with openssl pkcs12)", ErrUnsupported)
	}
	if classifyDER(data) != shapePKCS12 {
		return nil, nil, nil, fmt.Errorf("decoding PKCS#12: %w: not a PKCS#12 structure", ErrMalformed)
	}
	// Refuse absurd iteration counts before go-pkcs12 derives a single key.
	// A key bag inside an encrypted safe is out of sight until that safe is
	// decrypted; OpenSSL, Java, NSS and Windows all keep keys outside.
	info, ok := readPFX(cryptobyte.String(data))
	if !ok {
		return nil, nil, nil, fmt.Errorf("decoding PKCS#12: %w: invalid PFX structure", ErrMalformed)
	}
	if err := checkCounts(info.counts); err != nil {
		return nil, nil, nil, fmt.Errorf("decoding PKCS#12: %w", err)
	}
	key, first, rest, err := pkcs12.DecodeChain(data, password)
	if err != nil {
		if errors.Is(err, pkcs12.ErrIncorrectPassword) || errors.Is(err, pkcs12.ErrDecryption) {
			return nil, nil, nil, ErrWrongPassword
		}
		return nil, nil, nil, fmt.Errorf("decoding PKCS#12: %w: %w", ErrMalformed, err)
	}
	if _, ok := key.(crypto.Signer); !ok {
		return nil, nil, nil, fmt.Errorf("decoding PKCS#12: unsupported private key type %T", key)
	}
	certs := append([]*x509.Certificate{first}, rest...)
	for i, c := range certs {
		if KeyMatchesCertificate(key, c) == nil {
			chain = append(append(chain, certs[:i]...), certs[i+1:]...)
			return key, c, chain, nil
		}
	}
	return nil, nil, nil, fmt.Errorf("decoding PKCS#12: the key matches none of its %s", plural(len(certs), "certificate", "certificates"))
}

// CheckP12 decodes data with password and verifies that it holds key and
// leaf, so that a bundle is known good before it is reported written.
func CheckP12(data []byte, password string, key crypto.PrivateKey, leaf *x509.Certificate) error {
	gotKey, gotLeaf, _, err := DecodeP12(data, password)
	if err != nil {
		return fmt.Errorf("checking PKCS#12: %w", err)
	}
	if !gotLeaf.Equal(leaf) {
		return errors.New("checking PKCS#12: the bundle's certificate is not the one given")
	}
	want, ok := key.(interface{ Equal(crypto.PrivateKey) bool })
	if !ok || !want.Equal(gotKey) {
		return errors.New("checking PKCS#12: the bundle's private key is not the one given")
	}
	return nil
}
