package revoke

import (
	"time"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// crlFields are the parts of a CRL, as slices of its DER.
type crlFields struct {
	tbs        []byte // the signed TBSCertList element
	sigAlg     []byte // the outer AlgorithmIdentifier element
	signature  []byte
	issuer     []byte // the issuer Name element
	thisUpdate time.Time
	nextUpdate time.Time
	entries    cryptobyte.String // content of revokedCertificates
	extensions cryptobyte.String // content of the crlExtensions SEQUENCE
}

// splitCRL checks the structure of a DER CertificateList (RFC 5280 5.1) and
// returns its parts. Entries and extensions are parsed later.
func splitCRL(der []byte) (crlFields, error) {
	var f crlFields
	input := cryptobyte.String(der)
	var list, tbsElem, algElem cryptobyte.String
	var sig []byte
	if !input.ReadASN1(&list, cbasn1.SEQUENCE) || !input.Empty() {
		return f, malformed("not a DER CertificateList")
	}
	if !list.ReadASN1Element(&tbsElem, cbasn1.SEQUENCE) ||
		!list.ReadASN1Element(&algElem, cbasn1.SEQUENCE) ||
		!readBitString(&list, &sig) || !list.Empty() {
		return f, malformed("invalid CertificateList")
	}
	f.tbs, f.sigAlg, f.signature = tbsElem, algElem, sig

	var tbs, innerAlg, issuer cryptobyte.String
	var version int64
	if !tbsElem.ReadASN1(&tbs, cbasn1.SEQUENCE) ||
		!tbs.ReadASN1Int64WithTag(&version, cbasn1.INTEGER) {
		return f, malformed("invalid or missing version")
	}
	if version != 1 {
		return f, malformed("version %d is not v2", version+1)
	}
	if !tbs.ReadASN1Element(&innerAlg, cbasn1.SEQUENCE) || string(innerAlg) != string(algElem) {
		return f, malformed("inner and outer signature algorithms differ")
	}
	if !tbs.ReadASN1Element(&issuer, cbasn1.SEQUENCE) {
		return f, malformed("invalid issuer")
	}
	f.issuer = issuer
	var ok bool
	if f.thisUpdate, ok = readTime(&tbs); !ok {
		return f, malformed("invalid this update")
	}
	if !tbs.PeekASN1Tag(cbasn1.UTCTime) && !tbs.PeekASN1Tag(cbasn1.GeneralizedTime) {
		return f, malformed("no next update")
	}
	if f.nextUpdate, ok = readTime(&tbs); !ok {
		return f, malformed("invalid next update")
	}
	if f.nextUpdate.Before(f.thisUpdate) {
		return f, malformed("next update before this update")
	}
	if tbs.PeekASN1Tag(cbasn1.SEQUENCE) && !tbs.ReadASN1(&f.entries, cbasn1.SEQUENCE) {
		return f, malformed("invalid revoked certificates")
	}
	var exts cryptobyte.String
	var present bool
	if !tbs.ReadOptionalASN1(&exts, &present, cbasn1.Tag(0).Constructed().ContextSpecific()) ||
		(present && (!exts.ReadASN1(&f.extensions, cbasn1.SEQUENCE) || !exts.Empty())) ||
		!tbs.Empty() {
		return f, malformed("invalid CRL extensions")
	}
	return f, nil
}

// readBitString reads a BIT STRING with no unused bits.
func readBitString(s *cryptobyte.String, out *[]byte) bool {
	var bits cryptobyte.String
	if !s.ReadASN1(&bits, cbasn1.BIT_STRING) || len(bits) == 0 || bits[0] != 0 {
		return false
	}
	*out = bits[1:]
	return true
}

// readTime reads a UTCTime or GeneralizedTime.
func readTime(s *cryptobyte.String) (time.Time, bool) {
	var v cryptobyte.String
	var tag cbasn1.Tag
	if !s.ReadAnyASN1(&v, &tag) {
		return time.Time{}, false
	}
	return parseTime(byte(tag), v)
}
