package formats

import (
	"crypto/x509"
	"encoding/hex"
	"math/big"
	"strings"
)

// keyUsageNames are the RFC 5280 section 4.2.1.3 names, in bit order.
var keyUsageNames = []struct {
	bit  x509.KeyUsage
	name string
}{
	{x509.KeyUsageDigitalSignature, "digitalSignature"},
	{x509.KeyUsageContentCommitment, "contentCommitment"},
	{x509.KeyUsageKeyEncipherment, "keyEncipherment"},
	{x509.KeyUsageDataEncipherment, "dataEncipherment"},
	{x509.KeyUsageKeyAgreement, "keyAgreement"},
	{x509.KeyUsageCertSign, "keyCertSign"},
	{x509.KeyUsageCRLSign, "cRLSign"},
	{x509.KeyUsageEncipherOnly, "encipherOnly"},
	{x509.KeyUsageDecipherOnly, "decipherOnly"},
}

// KeyUsageNames returns the RFC 5280 names of the bits set in ku.
func KeyUsageNames(ku x509.KeyUsage) []string {
	var names []string
	for _, u := range keyUsageNames {
		if ku&u.bit != 0 {
			names = append(names, u.name)
		}
	}
	return names
}

var extKeyUsageNames = map[x509.ExtKeyUsage]string{
	x509.ExtKeyUsageAny:             "any",
	x509.ExtKeyUsageServerAuth:      "serverAuth",
	x509.ExtKeyUsageClientAuth:      "clientAuth",
	x509.ExtKeyUsageCodeSigning:     "codeSigning",
	x509.ExtKeyUsageEmailProtection: "emailProtection",
	x509.ExtKeyUsageIPSECEndSystem:  "ipsecEndSystem",
	x509.ExtKeyUsageIPSECTunnel:     "ipsecTunnel",
	x509.ExtKeyUsageIPSECUser:       "ipsecUser",
	x509.ExtKeyUsageTimeStamping:    "timeStamping",
	x509.ExtKeyUsageOCSPSigning:     "OCSPSigning",
}

// ExtKeyUsageNames returns the RFC 5280 names of a certificate's extended
// key usages; unknown ones appear as dotted OIDs.
func ExtKeyUsageNames(cert *x509.Certificate) []string {
	var names []string
	for _, u := range cert.ExtKeyUsage {
		if n, ok := extKeyUsageNames[u]; ok {
			names = append(names, n)
		}
	}
	for _, oid := range cert.UnknownExtKeyUsage {
		names = append(names, oid.String())
	}
	return names
}

// SerialHex returns a serial number in lowercase hex without separators,
// e.g. "5f3c01".
func SerialHex(n *big.Int) string {
	if n == nil {
		return ""
	}
	return n.Text(16)
}

// SerialColon returns a serial number as openssl prints it in -text output:
// lowercase hex bytes separated by colons, e.g. "5f:3c:01".
func SerialColon(n *big.Int) string {
	if n == nil {
		return ""
	}
	b := n.Bytes()
	if len(b) == 0 {
		b = []byte{0}
	}
	return colonHex(b, false)
}

// colonHex writes b as hex bytes separated by colons.
func colonHex(b []byte, upper bool) string {
	parts := make([]string, len(b))
	for i := range b {
		parts[i] = hex.EncodeToString(b[i : i+1])
	}
	s := strings.Join(parts, ":")
	if upper {
		s = strings.ToUpper(s)
	}
	return s
}

// reasonNames are the CRLReason names of RFC 5280 section 5.3.1.
var reasonNames = map[int]string{
	0:  "unspecified",
	1:  "keyCompromise",
	2:  "cACompromise",
	3:  "affiliationChanged",
	4:  "superseded",
	5:  "cessationOfOperation",
	6:  "certificateHold",
	8:  "removeFromCRL",
	9:  "privilegeWithdrawn",
	10: "aACompromise",
}
