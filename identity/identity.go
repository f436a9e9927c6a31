package identity

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

// VerifySuccess is the verification result of every client a proxy lets
// through, spelled as mod_ssl's SSL_CLIENT_VERIFY and nginx's
// $ssl_client_verify spell it.
const VerifySuccess = "SUCCESS"

// Identity is what a proxy knows about a verified client. Strings hold
// the decoded UTF-8 text; header profiles encode them for the wire. An
// Identity never changes once handed out: a new count of days left is a
// new Identity.
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
	// it (New leaves it 0) and renews it when the day changes.
	DaysLeft int
}

// New builds the identity of a client whose certificate cert has been
// verified through chain (the verified chain, leaf first; it may be nil).
// It fails only if the certificate's subject or issuer DER is malformed.
func New(cert *x509.Certificate, chain []*x509.Certificate) (*Identity, error) {
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
		SerialHex: SerialHex(cert.SerialNumber),
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
	id.SHA256 = Fingerprint(cert)
	s1 := sha1.Sum(cert.Raw)
	id.SHA1 = hex.EncodeToString(s1[:])
	if len(chain) > 1 {
		id.Chain = chain[1:]
	}
	return id, nil
}

// SerialHex prints n as OpenSSL's i2a_ASN1_INTEGER does: uppercase, two
// digits per byte, "00" for zero, a leading '-' for a negative number. It
// is the serial of the headers, the access log and a policy's rules.
func SerialHex(n *big.Int) string {
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

// Fingerprint is the lowercase hex SHA-256 of c's DER: Identity.SHA256 for
// a client, and how a policy names a CA (issuer_sha256).
func Fingerprint(c *x509.Certificate) string {
	s := sha256.Sum256(c.Raw)
	return hex.EncodeToString(s[:])
}

// DaysLeft is how many whole days a certificate ending at notAfter has
// left at now: the floor of (notAfter - now) / 24h. It is 0 on the last
// day (less than 24 hours left) and negative once the certificate has
// expired (-1 in the first day after). It is the one count of days left
// of the proxy: the days_left header field, the access log, and the
// refusal page.
func DaysLeft(notAfter, now time.Time) int {
	const day = 24 * time.Hour
	d := notAfter.Sub(now)
	n := d / day
	if d < 0 && d%day != 0 {
		n--
	}
	return int(n)
}
