package formats

import (
	"crypto"
	"crypto/x509"
)

// ParseCertificates returns the certificates in data (PEM or DER): one, a
// chain, or those of a PEM bundle with a key. Anything else gives a
// *KindError naming what was found.
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	obj, err := Detect(data)
	if err != nil {
		return nil, err
	}
	if obj.Kind != KindCertificate && obj.Kind != KindBundle {
		return nil, &KindError{Want: KindCertificate, Found: "a " + obj.String()}
	}
	return obj.Certificates, nil
}

// ParseCSR returns the certificate request in data (PEM or DER), with its
// signature not yet checked. Anything else gives a *KindError.
func ParseCSR(data []byte) (*x509.CertificateRequest, error) {
	obj, err := Detect(data)
	if err != nil {
		return nil, err
	}
	if obj.Kind != KindCSR {
		return nil, &KindError{Want: KindCSR, Found: "a " + obj.String()}
	}
	return obj.CSR, nil
}

// ParseCRL returns the CRL in data (PEM or DER), with its signature not yet
// checked. Anything else gives a *KindError.
func ParseCRL(data []byte) (*x509.RevocationList, error) {
	obj, err := Detect(data)
	if err != nil {
		return nil, err
	}
	if obj.Kind != KindCRL {
		return nil, &KindError{Want: KindCRL, Found: "a " + obj.String()}
	}
	return obj.CRL, nil
}

// EncodeBundle writes key (PKCS#8, encrypted with a non-empty password)
// followed by certs as one PEM file, the layout nginx, HAProxy and curl
// accept, and the one openssl pkcs12 -nodes writes.
func EncodeBundle(key crypto.PrivateKey, certs []*x509.Certificate, password []byte) ([]byte, error) {
	keyPEM, err := EncodePrivateKey(key, PKCS8, PEM, password)
	if err != nil {
		return nil, err
	}
	certsPEM, err := EncodeCertificates(certs, PEM)
	if err != nil {
		return nil, err
	}
	return append(keyPEM, certsPEM...), nil
}
