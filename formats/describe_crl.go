package formats

import (
	"cmp"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"math/big"
	"strings"
)

// IssuingDistributionPoint describes a CRL's issuing distribution point
// extension (RFC 5280 section 5.2.5): which certificates the CRL covers.
// Invalid is set, and nothing else but Critical, when it cannot be read.
type IssuingDistributionPoint struct {
	Critical           bool     `json:"critical"`
	Invalid            bool     `json:"invalid,omitempty"`
	Names              []string `json:"names,omitempty"`
	OnlyUserCerts      bool     `json:"only_user_certs,omitempty"`
	OnlyCACerts        bool     `json:"only_ca_certs,omitempty"`
	OnlyAttributeCerts bool     `json:"only_attribute_certs,omitempty"`
	OnlySomeReasons    []string `json:"only_some_reasons,omitempty"`
	IndirectCRL        bool     `json:"indirect_crl,omitempty"`
}

var (
	oidDeltaCRLIndicator        = asn1.ObjectIdentifier{2, 5, 29, 27}
	oidIssuingDistributionPoint = asn1.ObjectIdentifier{2, 5, 29, 28}
	oidCertificateIssuer        = asn1.ObjectIdentifier{2, 5, 29, 29}
)

// describeCRLScope fills in what the CRL's extensions say it covers: a
// delta CRL, an indirect one, an issuing distribution point.
func describeCRLScope(info *CRLInfo, crl *x509.RevocationList) {
	for _, ext := range crl.Extensions {
		switch {
		case ext.Id.Equal(oidDeltaCRLIndicator):
			info.Delta = true
			var base *big.Int
			if rest, err := asn1.Unmarshal(ext.Value, &base); err == nil && len(rest) == 0 {
				info.BaseNumber = base.String()
			}
		case ext.Id.Equal(oidIssuingDistributionPoint):
			info.DistributionPoint = parseIDP(ext)
			info.Indirect = info.Indirect || info.DistributionPoint.IndirectCRL
		}
	}
	for _, e := range crl.RevokedCertificateEntries {
		for _, ext := range e.Extensions {
			if ext.Id.Equal(oidCertificateIssuer) {
				info.Indirect = true
			}
		}
	}
}

// parseIDP decodes an IssuingDistributionPoint. Its fields are IMPLICIT
// context-tagged; distributionPoint is a CHOICE, so its tag is explicit.
func parseIDP(ext pkix.Extension) *IssuingDistributionPoint {
	var v struct {
		DistributionPoint asn1.RawValue  `asn1:"optional,tag:0"`
		OnlyUser          bool           `asn1:"optional,tag:1"`
		OnlyCA            bool           `asn1:"optional,tag:2"`
		OnlySomeReasons   asn1.BitString `asn1:"optional,tag:3"`
		Indirect          bool           `asn1:"optional,tag:4"`
		OnlyAttr          bool           `asn1:"optional,tag:5"`
	}
	idp := &IssuingDistributionPoint{Critical: ext.Critical}
	if rest, err := asn1.Unmarshal(ext.Value, &v); err != nil || len(rest) > 0 {
		idp.Invalid = true
		return idp
	}
	idp.OnlyUserCerts, idp.OnlyCACerts, idp.OnlyAttributeCerts, idp.IndirectCRL = v.OnlyUser, v.OnlyCA, v.OnlyAttr, v.Indirect
	for i := range v.OnlySomeReasons.BitLength {
		if v.OnlySomeReasons.At(i) == 1 {
			idp.OnlySomeReasons = append(idp.OnlySomeReasons, reasonFlagName(i))
		}
	}
	if v.OnlySomeReasons.BitLength > 0 && len(idp.OnlySomeReasons) == 0 {
		idp.OnlySomeReasons = []string{"none"}
	}
	if len(v.DistributionPoint.Bytes) > 0 {
		idp.Names = distributionPointNames(v.DistributionPoint.Bytes)
	}
	return idp
}

// distributionPointNames renders a DistributionPointName: the fullName
// [0] GeneralNames, or a name relative to the CRL issuer [1].
func distributionPointNames(der []byte) []string {
	var choice asn1.RawValue
	if _, err := asn1.Unmarshal(der, &choice); err != nil || choice.Class != asn1.ClassContextSpecific {
		return []string{"unreadable name"}
	}
	if choice.Tag != 0 {
		return []string{"name relative to the CRL issuer"}
	}
	var names []string
	for rest := choice.Bytes; len(rest) > 0; {
		var gn asn1.RawValue
		var err error
		if rest, err = asn1.Unmarshal(rest, &gn); err != nil {
			return append(names, "unreadable name")
		}
		switch gn.Tag {
		case 1:
			names = append(names, "email:"+string(gn.Bytes))
		case 2:
			names = append(names, "DNS:"+string(gn.Bytes))
		case 4:
			names = append(names, "DirName:"+dnString(gn.Bytes))
		case 6:
			names = append(names, "URI:"+string(gn.Bytes))
		default:
			names = append(names, fmt.Sprintf("general name of type %d", gn.Tag))
		}
	}
	return names
}

// reasonFlagName names bit i of ReasonFlags (RFC 5280 section 4.2.1.13).
func reasonFlagName(i int) string {
	names := []string{"unused", "keyCompromise", "cACompromise", "affiliationChanged", "superseded",
		"cessationOfOperation", "certificateHold", "privilegeWithdrawn", "aACompromise"}
	if i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("reason bit %d", i)
}

// scopeNote says in words what a CRL covers, or "" for a plain one.
func scopeNote(c *CRLInfo) string {
	var parts []string
	if c.Delta {
		parts = append(parts, "delta CRL (only the changes since CRL "+cmp.Or(c.BaseNumber, "?")+")")
	}
	if c.Indirect {
		parts = append(parts, "indirect CRL (may list other issuers' certificates)")
	}
	if p := c.DistributionPoint; p != nil {
		switch {
		case p.Invalid:
			parts = append(parts, "unreadable issuing distribution point")
		case p.OnlyUserCerts:
			parts = append(parts, "only user certificates")
		}
		if p.OnlyCACerts {
			parts = append(parts, "only CA certificates")
		}
		if p.OnlyAttributeCerts {
			parts = append(parts, "only attribute certificates")
		}
		if len(p.OnlySomeReasons) > 0 {
			parts = append(parts, "only reasons "+strings.Join(p.OnlySomeReasons, ", "))
		}
	}
	return strings.Join(parts, "; ")
}
