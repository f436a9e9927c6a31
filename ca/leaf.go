package ca

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"

	"minica/formats"
)

// ErrNoKey is returned by LoadLeaf when minica does not hold a
// certificate's private key (it signed a CSR).
var ErrNoKey = errors.New("minica does not hold the private key of this certificate")

// Leaf is an issued certificate with what a bundle of it needs.
type Leaf struct {
	Record *Record
	Cert   *x509.Certificate
	// Key is the stored private key; nil with ErrNoKey.
	Key crypto.Signer
	// Chain is the CA chain handed out after the leaf (see CA.Chain).
	Chain []*x509.Certificate
}

// LoadLeaf reads the certificate and, when minica generated it, the key of
// record r. Without a stored key it returns the Leaf (Key nil) and an error
// matching ErrNoKey, so that the caller can take the key from elsewhere.
func (c *CA) LoadLeaf(r *Record) (*Leaf, error) {
	cert, err := c.readCert(r.CertPath())
	if err != nil {
		return nil, fmt.Errorf("reading certificate %s: %w", r.Serial, err)
	}
	leaf := &Leaf{Record: r, Cert: cert, Chain: c.Chain}
	if !r.HasKey {
		return leaf, fmt.Errorf("%w (%q, serial %s)", ErrNoKey, r.Name, r.Serial)
	}
	data, err := c.dir.ReadFile(r.KeyPath())
	if err != nil {
		return nil, fmt.Errorf("reading key %q: %w", c.dir.Join(r.KeyPath()), err)
	}
	key, err := formats.ParsePrivateKeyPEM(data, nil)
	if err != nil {
		return nil, fmt.Errorf("reading key %q: %w", c.dir.Join(r.KeyPath()), err)
	}
	if err := formats.KeyMatchesCertificate(key, cert); err != nil {
		return nil, fmt.Errorf("reading key %q: %w", c.dir.Join(r.KeyPath()), err)
	}
	leaf.Key = key
	return leaf, nil
}
