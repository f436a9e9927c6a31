package formats

import (
	"bytes"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"time"
)

func describeCertificate(c *x509.Certificate, now time.Time) CertificateInfo {
	info := CertificateInfo{
		Subject:            dnString(c.RawSubject),
		Issuer:             dnString(c.RawIssuer),
		SelfSigned:         isSelfSigned(c),
		DNSNames:           c.DNSNames,
		EmailAddresses:     c.EmailAddresses,
		NotBefore:          c.NotBefore.UTC(),
		NotAfter:           c.NotAfter.UTC(),
		DaysLeft:           daysLeft(c.NotAfter, now),
		Status:             validity(c, now),
		Key:                KeyType(c.PublicKey),
		KeyUsage:           KeyUsageNames(c.KeyUsage),
		ExtKeyUsage:        ExtKeyUsageNames(c),
		IsCA:               c.BasicConstraintsValid && c.IsCA,
		Serial:             SerialHex(c.SerialNumber),
		SerialColon:        SerialColon(c.SerialNumber),
		SignatureAlgorithm: c.SignatureAlgorithm.String(),
		SHA256:             FingerprintSHA256(c.Raw),
		SHA1:               FingerprintSHA1(c.Raw),
		PublicKeySHA256:    publicKeyFingerprint(c.PublicKey),
	}
	for _, ip := range c.IPAddresses {
		info.IPAddresses = append(info.IPAddresses, ip.String())
	}
	for _, u := range c.URIs {
		info.URIs = append(info.URIs, u.String())
	}
	return info
}

func validity(c *x509.Certificate, now time.Time) string {
	switch {
	case now.Before(c.NotBefore):
		return "not yet valid"
	case now.After(c.NotAfter):
		return "expired"
	}
	return "valid"
}

func dnString(raw []byte) string {
	s, err := DistinguishedName(raw)
	if err != nil {
		return "(unparsable name)"
	}
	return s
}

func describeCSR(csr *x509.CertificateRequest) *CSRInfo {
	info := &CSRInfo{
		Subject:            dnString(csr.RawSubject),
		DNSNames:           csr.DNSNames,
		EmailAddresses:     csr.EmailAddresses,
		Key:                KeyType(csr.PublicKey),
		SignatureAlgorithm: csr.SignatureAlgorithm.String(),
		SignatureValid:     csr.CheckSignature() == nil,
		PublicKeySHA256:    publicKeyFingerprint(csr.PublicKey),
	}
	for _, ip := range csr.IPAddresses {
		info.IPAddresses = append(info.IPAddresses, ip.String())
	}
	for _, u := range csr.URIs {
		info.URIs = append(info.URIs, u.String())
	}
	return info
}

var oidReasonCode = asn1.ObjectIdentifier{2, 5, 29, 21}

func describeCRL(crl *x509.RevocationList, now time.Time) *CRLInfo {
	info := &CRLInfo{
		Issuer:             dnString(crl.RawIssuer),
		ThisUpdate:         crl.ThisUpdate.UTC(),
		SignatureAlgorithm: crl.SignatureAlgorithm.String(),
		Entries:            []CRLEntry{},
	}
	if crl.Number != nil {
		info.Number = crl.Number.String()
	}
	if !crl.NextUpdate.IsZero() {
		next := crl.NextUpdate.UTC()
		days := daysLeft(next, now)
		info.NextUpdate, info.DaysLeft = &next, &days
	}
	if len(crl.AuthorityKeyId) > 0 {
		info.AuthorityKeyID = hex.EncodeToString(crl.AuthorityKeyId)
	}
	for _, e := range crl.RevokedCertificateEntries {
		entry := CRLEntry{Serial: SerialHex(e.SerialNumber), RevokedAt: e.RevocationTime.UTC()}
		for _, ext := range e.Extensions {
			if ext.Id.Equal(oidReasonCode) {
				entry.Reason = reasonName(e.ReasonCode)
			}
		}
		info.Entries = append(info.Entries, entry)
	}
	describeCRLScope(info, crl)
	return info
}

func reasonName(code int) string {
	if s, ok := reasonNames[code]; ok {
		return s
	}
	return fmt.Sprintf("unknown reason %d", code)
}

// isSelfSigned reports whether c names itself as issuer and its signature
// verifies with its own key. CheckSignatureFrom would refuse a non-CA
// signer, and a self-signed leaf is self-signed all the same.
func isSelfSigned(c *x509.Certificate) bool {
	return bytes.Equal(c.RawSubject, c.RawIssuer) &&
		c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) == nil
}
