package revoke

import (
	"bytes"
	"cmp"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// maxParsedSerial bounds serials in CRLs read from elsewhere. RFC 5280 says
// 20 octets; some CAs have exceeded it, so a little slack is allowed.
const maxParsedSerial = 32

var oidDeltaCRLIndicator = []byte{0x55, 0x1d, 0x1b} // 2.5.29.27

// ParseCRL parses a PEM ("X509 CRL") or DER CRL and verifies it against
// issuer, the CA certificate that should have signed it.
//
// Errors wrap ErrMalformed for bytes that are not a well-formed v2 CRL with a
// CRL number and a nextUpdate, ErrWrongIssuer when the issuer name or
// authority key identifier differ from issuer's, ErrBadSignature when the
// signature does not verify, and ErrIncomplete for a delta CRL or one whose
// issuing distribution point leaves out some client certificates, critical
// or not. Other critical extensions this package does not implement are
// refused as malformed. ParseCRL does not check the CRL's dates; see
// Freshness and MayReplace. It does not keep data.
func ParseCRL(data []byte, issuer *x509.Certificate) (*CRL, error) {
	crl, entries, err := verifyCRL(data, issuer)
	if err != nil {
		return nil, err
	}
	if crl.table, err = parseEntries(entries, false); err != nil {
		return nil, err
	}
	return crl, nil
}

// ParseDelta parses and verifies a delta CRL (RFC 5280 section 5.2.4)
// against issuer as ParseCRL does a complete CRL, with its errors, and
// ErrNotDelta for a CRL without the delta CRL indicator. Its entries may
// carry removeFromCRL. A delta CRL is used through WithDelta, never alone.
func ParseDelta(data []byte, issuer *x509.Certificate) (*CRL, error) {
	crl, err := parseAny(data, issuer)
	if err == nil && crl.deltaBase == nil {
		return nil, fmt.Errorf("%w: no delta CRL indicator (CRL number %s)", ErrNotDelta, crl.number)
	}
	return crl, err
}

// parseAny is ParseCRL that takes a delta CRL too.
func parseAny(data []byte, issuer *x509.Certificate) (*CRL, error) {
	crl, entries, err := verifyAny(data, issuer)
	if err != nil {
		return nil, err
	}
	if crl.table, err = parseEntries(entries, crl.deltaBase != nil); err != nil {
		return nil, err
	}
	return crl, nil
}

// CRLNumber checks data as ParseCRL does, except for the list of entries,
// which it skips, and returns the CRL number. It is for a CA that needs the
// number of its last CRL: it costs a hash of the CRL rather than a parse of
// every entry, and a CRL with malformed entries passes it.
func CRLNumber(data []byte, issuer *x509.Certificate) (*big.Int, error) {
	crl, _, err := verifyCRL(data, issuer)
	if err != nil {
		return nil, err
	}
	return crl.number, nil
}

// CheckSignature reports whether data is a CRL that issuer signed: its
// issuer name, authority key identifier and signature, with the errors of
// ParseCRL. Unlike ParseCRL it does not judge whether the CRL can be used
// (its number, scope, extensions and entries), so that a description of a
// delta or scoped CRL can still say who signed it; the structure up to the
// signature must be well-formed all the same.
func CheckSignature(data []byte, issuer *x509.Certificate) error {
	_, err := checkSigned(data, issuer)
	return err
}

// verifyCRL does all of ParseCRL but the entries, which it returns unread.
// The signature is checked before the extensions are judged, so that a
// forged CRL is reported as forged whatever it claims to be.
func verifyCRL(data []byte, issuer *x509.Certificate) (*CRL, cryptobyte.String, error) {
	crl, entries, err := verifyAny(data, issuer)
	if err == nil && crl.deltaBase != nil {
		err = fmt.Errorf("%w: delta CRL (deltaCRLIndicator, base CRL %s)", ErrIncomplete, crl.deltaBase)
	}
	return crl, entries, err
}

// verifyAny is verifyCRL that takes a delta CRL too.
func verifyAny(data []byte, issuer *x509.Certificate) (*CRL, cryptobyte.String, error) {
	f, err := checkSigned(data, issuer)
	if err != nil {
		return nil, nil, err
	}
	crl := &CRL{issuer: issuer, thisUpdate: f.thisUpdate, nextUpdate: f.nextUpdate}
	if err := parseCRLExtensions(f.extensions, crl); err != nil {
		return nil, nil, err
	}
	return crl, f.entries, nil
}

// checkSigned splits data and checks it against issuer.
func checkSigned(data []byte, issuer *x509.Certificate) (crlFields, error) {
	if issuer == nil {
		return crlFields{}, errors.New("checking CRL: no issuer certificate")
	}
	der, err := crlDER(data)
	if err != nil {
		return crlFields{}, err
	}
	f, err := splitCRL(der)
	if err != nil {
		return crlFields{}, err
	}
	if !bytes.Equal(f.issuer, issuer.RawSubject) {
		crlIssuer, ca := nameString(f.issuer), nameString(issuer.RawSubject)
		return crlFields{}, &IssuerError{CRLIssuer: crlIssuer, CA: ca, detail: fmt.Sprintf("CRL issuer is %q, CA is %q", crlIssuer, ca)}
	}
	aki, err := authorityKeyID(f.extensions)
	if err != nil {
		return crlFields{}, err
	}
	if aki != nil && len(issuer.SubjectKeyId) > 0 && !bytes.Equal(aki, issuer.SubjectKeyId) {
		name := nameString(issuer.RawSubject)
		return crlFields{}, &IssuerError{CRLIssuer: name, CA: name, OtherKey: true,
			detail: fmt.Sprintf("authority key identifier %x, CA key identifier %x", aki, issuer.SubjectKeyId)}
	}
	if issuer.KeyUsage != 0 && issuer.KeyUsage&x509.KeyUsageCRLSign == 0 {
		// RFC 5280 section 4.2.1.3: only a key with cRLSign signs CRLs.
		return crlFields{}, fmt.Errorf("%w: CA %q may not sign CRLs: its key usage lacks cRLSign", ErrWrongIssuer, nameString(issuer.RawSubject))
	}
	alg, ok := lookupAlg(f.sigAlg)
	if !ok {
		return crlFields{}, fmt.Errorf("%w: unsupported signature algorithm %x", ErrBadSignature, f.sigAlg)
	}
	if err := issuer.CheckSignature(alg.x509, f.tbs, f.signature); err != nil {
		return crlFields{}, fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	return f, nil
}

// crlDER returns the DER inside a PEM "X509 CRL" block, or data itself when
// it is not PEM.
func crlDER(data []byte) ([]byte, error) {
	if !bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("-----BEGIN")) {
		return data, nil
	}
	block, rest := pem.Decode(data)
	switch {
	case block == nil:
		return nil, malformed("invalid PEM")
	case block.Type != "X509 CRL":
		return nil, malformed("PEM block is %q, not \"X509 CRL\"", block.Type)
	case len(bytes.TrimSpace(rest)) > 0:
		return nil, malformed("data after the PEM block")
	}
	return block.Bytes, nil
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

func nameString(raw []byte) string {
	var rdn pkix.RDNSequence
	if rest, err := asn1.Unmarshal(raw, &rdn); err != nil || len(rest) > 0 {
		return fmt.Sprintf("%x", raw)
	}
	var name pkix.Name
	name.FillFromRDNSequence(&rdn)
	return name.String()
}

// authorityKeyID returns the key identifier of the authority key
// identifier extension, if there is one.
func authorityKeyID(exts cryptobyte.String) ([]byte, error) {
	for !exts.Empty() {
		oid, _, value, ok := readExtension(&exts)
		if !ok {
			return nil, malformed("invalid CRL extension")
		}
		if !bytes.Equal(oid, oidAuthorityKeyID) {
			continue
		}
		var seq, id cryptobyte.String
		var present bool
		if !value.ReadASN1(&seq, cbasn1.SEQUENCE) || !value.Empty() ||
			!seq.ReadOptionalASN1(&id, &present, cbasn1.Tag(0).ContextSpecific()) {
			return nil, malformed("invalid authority key identifier")
		}
		if present {
			return []byte(id), nil
		}
		return nil, nil
	}
	return nil, nil
}

// parseCRLExtensions reads the crlExtensions into crl and refuses those
// that make it unusable as the complete CRL. The delta CRL indicator and
// the issuing distribution point are judged whether marked critical or
// not: ignoring a non-critical one would apply a partial CRL as complete,
// and let through clients it leaves out.
func parseCRLExtensions(exts cryptobyte.String, crl *CRL) error {
	seen := map[string]bool{}
	var incomplete error
	for !exts.Empty() {
		oid, critical, value, ok := readExtension(&exts)
		if !ok {
			return malformed("invalid CRL extension")
		}
		if seen[string(oid)] {
			return malformed("extension %s repeated", oidString(oid))
		}
		seen[string(oid)] = true
		switch {
		case bytes.Equal(oid, oidCRLNumber):
			if critical {
				return malformed("CRL number marked critical (RFC 5280 section 5.2.3: it is not)")
			}
			n := new(big.Int)
			if !value.ReadASN1Integer(n) || !value.Empty() || n.Sign() < 0 {
				return malformed("invalid CRL number")
			}
			crl.number = n
		case bytes.Equal(oid, oidAuthorityKeyID):
			// Read by authorityKeyID before the signature was checked.
		case bytes.Equal(oid, oidDeltaCRLIndicator):
			base := new(big.Int)
			if !value.ReadASN1Integer(base) || !value.Empty() || base.Sign() < 0 {
				return malformed("invalid delta CRL indicator")
			}
			crl.deltaBase = base // a delta, critical or not: never the complete CRL
		case bytes.Equal(oid, oidIssuingDistributionPoint):
			err := checkIssuingDistributionPoint(value)
			if err != nil && !errors.Is(err, ErrIncomplete) {
				return err
			}
			incomplete = cmp.Or(incomplete, err)
		case critical:
			return malformed("unsupported critical extension %s", oidString(oid))
		}
	}
	if crl.number == nil {
		return malformed("no CRL number")
	}
	return incomplete
}

var oidIssuingDistributionPoint = []byte{0x55, 0x1d, 0x1c} // 2.5.29.28

// checkIssuingDistributionPoint reads an IssuingDistributionPoint (RFC 5280
// section 5.2.5) and returns an error wrapping ErrIncomplete when it limits
// the CRL to fewer certificates than the client certificates it is used
// for. A distribution point name and onlyContainsUserCerts do not: a
// client certificate is a user certificate.
func checkIssuingDistributionPoint(value cryptobyte.String) error {
	invalid := malformed("invalid issuing distribution point")
	var idp cryptobyte.String
	if !value.ReadASN1(&idp, cbasn1.SEQUENCE) || !value.Empty() {
		return invalid
	}
	if idp.Empty() {
		return malformed("empty issuing distribution point") // forbidden by section 5.2.5
	}
	if !idp.SkipOptionalASN1(cbasn1.Tag(0).Constructed().ContextSpecific()) { // distributionPoint
		return invalid
	}
	var flags [6]bool // by tag; [0] and [3] are not booleans
	var reasons bool
	for tag := range uint8(6) {
		if tag == 0 {
			continue
		}
		var v cryptobyte.String
		var present bool
		if !idp.ReadOptionalASN1(&v, &present, cbasn1.Tag(tag).ContextSpecific()) {
			return invalid
		}
		switch {
		case !present:
		case tag == 3:
			if len(v) == 0 || v[0] > 7 {
				return invalid
			}
			reasons = true
		case len(v) != 1 || v[0] != 0 && v[0] != 0xff:
			return invalid
		default:
			flags[tag] = v[0] == 0xff
		}
	}
	if !idp.Empty() {
		return invalid
	}
	for _, f := range []struct {
		set  bool
		name string
	}{{flags[2], "onlyContainsCACerts"}, {flags[5], "onlyContainsAttributeCerts"}, {reasons, "onlySomeReasons"}, {flags[4], "indirectCRL"}} {
		if f.set {
			return fmt.Errorf("%w: issuing distribution point has %s", ErrIncomplete, f.name)
		}
	}
	return nil
}

// readExtension reads one Extension (RFC 5280 section 4.1) and returns the
// content octets of its extnID and of its extnValue.
func readExtension(s *cryptobyte.String) (oid []byte, critical bool, value cryptobyte.String, ok bool) {
	var ext, id cryptobyte.String
	if !s.ReadASN1(&ext, cbasn1.SEQUENCE) || !ext.ReadASN1(&id, cbasn1.OBJECT_IDENTIFIER) {
		return nil, false, nil, false
	}
	// ReadOptionalASN1Boolean expects an explicitly tagged BOOLEAN; this
	// one is untagged with DEFAULT FALSE.
	if ext.PeekASN1Tag(cbasn1.BOOLEAN) && !ext.ReadASN1Boolean(&critical) {
		return nil, false, nil, false
	}
	if !ext.ReadASN1(&value, cbasn1.OCTET_STRING) ||
		!ext.Empty() {
		return nil, false, nil, false
	}
	return id, critical, value, true
}

func oidString(content []byte) string {
	var oid asn1.ObjectIdentifier
	full := append([]byte{tagOID, byte(len(content))}, content...)
	if len(content) > 127 {
		return fmt.Sprintf("%x", content)
	}
	if _, err := asn1.Unmarshal(full, &oid); err != nil {
		return fmt.Sprintf("%x", content)
	}
	return oid.String()
}
