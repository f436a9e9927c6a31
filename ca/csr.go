package ca

import (
	"crypto/x509"
	"encoding/asn1"
)

// CSRFields says which parts of a request the caller set itself, so that
// MergeCSR leaves them alone.
type CSRFields struct {
	CommonName, Organization, OrganizationalUnit bool
}

// MergeCSR fills r from a CSR for signing it: the subject's CN, O and OU
// where set does not say the caller chose them, every SAN the CSR asks for
// in addition to r's, and its public key. A server certificate's CN is its
// name, so a CN that only came from the CSR is dropped for one. Nothing
// else is copied: the profile decides every extension (see
// IgnoredCSRExtensions).
func (r *Request) MergeCSR(csr *x509.CertificateRequest, set CSRFields) {
	if !set.CommonName && csr.Subject.CommonName != "" {
		r.CommonName = csr.Subject.CommonName
	}
	if !set.Organization {
		r.Organization = csr.Subject.Organization
	}
	if !set.OrganizationalUnit {
		r.OrganizationalUnit = csr.Subject.OrganizationalUnit
	}
	r.DNSNames = append(r.DNSNames, csr.DNSNames...)
	r.IPs = append(r.IPs, csr.IPAddresses...)
	r.Emails = append(r.Emails, csr.EmailAddresses...)
	for _, u := range csr.URIs {
		r.URIs = append(r.URIs, u.String())
	}
	r.PublicKey = csr.PublicKey
	if r.Profile == Server && r.CommonName == csr.Subject.CommonName {
		r.CommonName = ""
	}
}

var (
	oidSAN              = asn1.ObjectIdentifier{2, 5, 29, 17}
	oidBasicConstraints = asn1.ObjectIdentifier{2, 5, 29, 19}
)

// csrExtensionNames names the extensions a CSR commonly requests.
var csrExtensionNames = map[string]string{
	"2.5.29.19": "basicConstraints",
	"2.5.29.15": "keyUsage",
	"2.5.29.37": "extKeyUsage",
	"2.5.29.30": "nameConstraints",
}

// IgnoredCSRExtensions names the extensions a CSR requests besides its
// SANs, which MergeCSR never copies: "keyUsage", "basicConstraints (CA:TRUE)"
// for a CSR asking to be a CA, "extension OID" for the unknown ones.
func IgnoredCSRExtensions(csr *x509.CertificateRequest) []string {
	var out []string
	for _, ext := range csr.Extensions {
		if ext.Id.Equal(oidSAN) {
			continue
		}
		id := ext.Id.String()
		name, ok := csrExtensionNames[id]
		if !ok {
			name = "extension " + id
		}
		if ext.Id.Equal(oidBasicConstraints) && requestsCA(ext.Value) {
			name += " (CA:TRUE)"
		}
		out = append(out, name)
	}
	return out
}

func requestsCA(value []byte) bool {
	var bc struct {
		IsCA bool `asn1:"optional"`
	}
	_, err := asn1.Unmarshal(value, &bc)
	return err == nil && bc.IsCA
}
