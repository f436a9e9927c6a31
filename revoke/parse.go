package revoke

import (
	"bytes"
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
// authority key identifier differ from issuer's, and ErrBadSignature when the
// signature does not verify. Delta CRLs and other critical extensions this
// package does not implement are refused as malformed. ParseCRL does not
// check the CRL's dates; see CRL.CheckTime. It does not keep data.
func ParseCRL(data []byte, issuer *x509.Certificate) (*CRL, error) {
	crl, entries, err := verifyCRL(data, issuer)
	if err != nil {
		return nil, err
	}
	if crl.table, err = parseEntries(entries); err != nil {
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

// verifyCRL does all of ParseCRL but the entries, which it returns unread.
func verifyCRL(data []byte, issuer *x509.Certificate) (*CRL, cryptobyte.String, error) {
	if issuer == nil {
		return nil, nil, errors.New("checking CRL: no issuer certificate")
	}
	der, err := crlDER(data)
	if err != nil {
		return nil, nil, err
	}
	f, err := splitCRL(der)
	if err != nil {
		return nil, nil, err
	}
	if !bytes.Equal(f.issuer, issuer.RawSubject) {
		return nil, nil, fmt.Errorf("%w: CRL issuer is %q, CA is %q", ErrWrongIssuer, nameString(f.issuer), nameString(issuer.RawSubject))
	}
	crl := &CRL{issuer: issuer, thisUpdate: f.thisUpdate, nextUpdate: f.nextUpdate}
	aki, err := parseCRLExtensions(f.extensions, crl)
	if err != nil {
		return nil, nil, err
	}
	if aki != nil && len(issuer.SubjectKeyId) > 0 && !bytes.Equal(aki, issuer.SubjectKeyId) {
		return nil, nil, fmt.Errorf("%w: authority key identifier %x, CA key identifier %x", ErrWrongIssuer, aki, issuer.SubjectKeyId)
	}
	alg, ok := lookupAlg(f.sigAlg)
	if !ok {
		return nil, nil, fmt.Errorf("%w: unsupported signature algorithm %x", ErrBadSignature, f.sigAlg)
	}
	if err := issuer.CheckSignature(alg.x509, f.tbs, f.signature); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	return crl, f.entries, nil
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

// parseCRLExtensions reads the crlExtensions into crl and returns the
// authority key identifier, if any.
func parseCRLExtensions(exts cryptobyte.String, crl *CRL) (aki []byte, err error) {
	seen := map[string]bool{}
	for !exts.Empty() {
		oid, critical, value, ok := readExtension(&exts)
		if !ok {
			return nil, malformed("invalid CRL extension")
		}
		if seen[string(oid)] {
			return nil, malformed("extension %s repeated", oidString(oid))
		}
		seen[string(oid)] = true
		switch {
		case bytes.Equal(oid, oidCRLNumber):
			n := new(big.Int)
			if !value.ReadASN1Integer(n) || !value.Empty() || n.Sign() < 0 {
				return nil, malformed("invalid CRL number")
			}
			crl.number = n
		case bytes.Equal(oid, oidAuthorityKeyID):
			var seq cryptobyte.String
			if !value.ReadASN1(&seq, cbasn1.SEQUENCE) || !value.Empty() {
				return nil, malformed("invalid authority key identifier")
			}
			var id cryptobyte.String
			var present bool
			if !seq.ReadOptionalASN1(&id, &present, cbasn1.Tag(0).ContextSpecific()) {
				return nil, malformed("invalid authority key identifier")
			}
			if present {
				aki = []byte(id)
			}
		case bytes.Equal(oid, oidDeltaCRLIndicator):
			return nil, malformed("delta CRLs are not supported")
		case critical:
			return nil, malformed("unsupported critical extension %s", oidString(oid))
		}
	}
	if crl.number == nil {
		return nil, malformed("no CRL number")
	}
	return aki, nil
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
