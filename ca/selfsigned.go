package ca

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"time"
)

// SelfSigned makes a self-signed server certificate and its new key, for
// the cases where no CA is wanted. req is validated as Issue validates a
// server request (its Profile is forced to Server); the defaults are those
// of DefaultSettings. The certificate is valid from now-Backdate for
// req.Validity, the backdate included, and is not recorded anywhere.
func SelfSigned(req Request, now time.Time) (*x509.Certificate, crypto.Signer, error) {
	req.Profile = Server
	req.PublicKey = nil
	uris, err := req.normalize(DefaultSettings())
	if err != nil {
		return nil, nil, err
	}
	pub, key, err := req.key()
	if err != nil {
		return nil, nil, err
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	now = now.UTC().Truncate(time.Second)
	notBefore, notAfter, err := leafValidity(now, req.Validity)
	if err != nil {
		return nil, nil, err
	}
	tmpl, err := req.template(serial, pub, uris, notBefore, notAfter, Settings{})
	if err != nil {
		return nil, nil, err
	}
	// Go omits the authority key identifier of a self-issued certificate;
	// RFC 5280 section 4.2.1.1 allows that only for CA certificates.
	tmpl.AuthorityKeyId = tmpl.SubjectKeyId
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing signed certificate: %w", err)
	}
	return cert, key, nil
}
