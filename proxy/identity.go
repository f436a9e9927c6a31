package proxy

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// VerifySuccess is the verification result of every client the proxy lets
// through, spelled as mod_ssl's SSL_CLIENT_VERIFY and nginx's
// $ssl_client_verify spell it.
const VerifySuccess = "SUCCESS"

// Identity is what the proxy knows about a verified client. Strings hold
// the decoded UTF-8 text; header profiles encode them for the wire.
type Identity struct {
	CN       string   // first commonName of the subject, "" if none
	Email    string   // first rfc822Name SAN, else first DN emailAddress
	DNEmail  string   // first emailAddress attribute of the subject DN
	O        []string // organizationName attributes of the subject
	OU       []string // organizationalUnitName attributes of the subject
	DN       string   // subject DN, RFC 4514 with OpenSSL's escaping
	IssuerDN string   // issuer DN, same form
	DNSNames []string // DNS SANs
	Emails   []string // rfc822Name SANs
	URIs     []string // URI SANs
	IPs      []string // IP address SANs, in net.IP.String form

	Serial    *big.Int
	SerialHex string // uppercase hex, two digits per byte, as OpenSSL's i2a_ASN1_INTEGER
	SHA256    string // lowercase hex SHA-256 of the DER certificate
	SHA1      string // lowercase hex SHA-1 of the DER certificate, as nginx's $ssl_client_fingerprint
	NotBefore time.Time
	NotAfter  time.Time
	Cert      *x509.Certificate
	Chain     []*x509.Certificate // the verified chain after the leaf, up to the root
	PEM       string              // the certificate PEM-encoded, 64-column lines, final newline
	Verify    string              // VerifySuccess
	// DaysLeft is DaysLeft(NotAfter, now) at the request: the proxy sets
	// it (NewIdentity leaves it 0) and renews it when the day changes.
	DaysLeft int
}

// NewIdentity builds the identity of a client whose certificate cert has been
// verified through chain (the verified chain, leaf first; it may be nil).
// It fails only if the certificate's subject or issuer DER is malformed.
func NewIdentity(cert *x509.Certificate, chain []*x509.Certificate) (*Identity, error) {
	if cert == nil {
		return nil, errors.New("no certificate")
	}
	subject, err := parseDN(cert.RawSubject)
	if err != nil {
		return nil, fmt.Errorf("parsing subject: %w", err)
	}
	issuer, err := parseDN(cert.RawIssuer)
	if err != nil {
		return nil, fmt.Errorf("parsing issuer: %w", err)
	}
	id := &Identity{
		DN:        formatDN(subject),
		IssuerDN:  formatDN(issuer),
		O:         allValues(subject, oidO),
		OU:        allValues(subject, oidOU),
		DNSNames:  cert.DNSNames,
		Emails:    cert.EmailAddresses,
		Serial:    cert.SerialNumber,
		SerialHex: serialHex(cert.SerialNumber),
		NotBefore: cert.NotBefore,
		NotAfter:  cert.NotAfter,
		Cert:      cert,
		PEM:       string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})),
		Verify:    VerifySuccess,
	}
	id.CN, _ = firstValue(subject, oidCN)
	id.DNEmail, _ = firstValue(subject, oidEmailAddress)
	id.Email = id.DNEmail
	if len(cert.EmailAddresses) > 0 {
		id.Email = cert.EmailAddresses[0]
	}
	for _, u := range cert.URIs {
		id.URIs = append(id.URIs, u.String())
	}
	for _, ip := range cert.IPAddresses {
		id.IPs = append(id.IPs, ip.String())
	}
	s256 := sha256.Sum256(cert.Raw)
	id.SHA256 = hex.EncodeToString(s256[:])
	s1 := sha1.Sum(cert.Raw)
	id.SHA1 = hex.EncodeToString(s1[:])
	if len(chain) > 1 {
		id.Chain = chain[1:]
	}
	return id, nil
}

// serialHex prints n as OpenSSL's i2a_ASN1_INTEGER does: uppercase, two
// digits per byte, "00" for zero, a leading '-' for a negative number.
func serialHex(n *big.Int) string {
	if n == nil {
		return ""
	}
	sign := ""
	if n.Sign() < 0 {
		sign = "-"
	}
	b := new(big.Int).Abs(n).Bytes()
	if len(b) == 0 {
		return "00"
	}
	out := make([]byte, 0, 2*len(b)+1)
	out = append(out, sign...)
	for _, c := range b {
		out = append(out, hexUpper[c>>4], hexUpper[c&0xf])
	}
	return string(out)
}
