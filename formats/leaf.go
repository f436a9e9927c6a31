package formats

import (
	"crypto"
	"crypto/x509"
	"fmt"
)

// SplitLeaf picks, among certs, the certificate of key: it returns that one
// as the leaf and the others as its chain, in the order given. Without a
// match the error matches ErrKeyMismatch and says how many were checked.
func SplitLeaf(key crypto.PrivateKey, certs []*x509.Certificate) (leaf *x509.Certificate, chain []*x509.Certificate, err error) {
	for i, cert := range certs {
		if KeyMatchesCertificate(key, cert) == nil {
			chain = append(append([]*x509.Certificate{}, certs[:i]...), certs[i+1:]...)
			return cert, chain, nil
		}
	}
	n := fmt.Sprintf("%d certificates", len(certs))
	if len(certs) == 1 {
		n = "1 certificate"
	}
	return nil, nil, fmt.Errorf("%w (checked %s)", ErrKeyMismatch, n)
}
