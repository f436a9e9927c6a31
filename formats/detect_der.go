package formats

import (
	"crypto/x509"
	"encoding/asn1"
	"fmt"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// derShape is what the outline of a DER structure says it is, before any
// full parse.
type derShape int

const (
	shapeUnknown derShape = iota
	shapeCertificate
	shapeCSR
	shapeCRL
	shapePKCS8
	shapePKCS8Encrypted
	shapeSEC1
	shapePKCS1Private
	shapePKIX
	shapePKCS1Public
	shapePKCS12
)

var oidData = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}

func detectDER(data []byte) (*Object, error) {
	// A PKCS#12 bundle keeps its original bytes: its MAC covers them, and
	// DecodeP12 must see a BER bundle as BER to say so.
	original := data
	data, err := normalizeDER(data)
	if err != nil {
		return nil, err
	}
	obj := &Object{Encoding: DER}
	switch classifyDER(data) {
	case shapeCertificate:
		cert, err := x509.ParseCertificate(data)
		if err != nil {
			return nil, derError("certificate", data, err)
		}
		obj.Kind, obj.Certificates = KindCertificate, []*x509.Certificate{cert}
	case shapeCSR:
		csr, err := x509.ParseCertificateRequest(data)
		if err != nil {
			return nil, derError("certificate request", data, err)
		}
		obj.Kind, obj.CSR = KindCSR, csr
	case shapeCRL:
		crl, err := x509.ParseRevocationList(data)
		if err != nil {
			return nil, derError("CRL", data, err)
		}
		obj.Kind, obj.CRL = KindCRL, crl
	case shapePKCS8, shapePKCS8Encrypted, shapeSEC1, shapePKCS1Private:
		key, err := keyFromDER(data, shapeKeyFormat[classifyDER(data)])
		if err != nil {
			return nil, err
		}
		obj.Kind, obj.Key = KindPrivateKey, key
	case shapePKIX, shapePKCS1Public:
		pub, err := publicKeyFromDER(data, classifyDER(data) == shapePKCS1Public)
		if err != nil {
			return nil, err
		}
		obj.Kind, obj.PublicKey = KindPublicKey, pub
	case shapePKCS12:
		obj.Kind, obj.PKCS12 = KindPKCS12, original
	default:
		return nil, fmt.Errorf("%w: a DER SEQUENCE that is not a certificate, request, CRL, key or PKCS#12 bundle", ErrUnknownFormat)
	}
	return obj, nil
}

var shapeKeyFormat = map[derShape]KeyFormat{
	shapePKCS8:          PKCS8,
	shapePKCS8Encrypted: PKCS8Encrypted,
	shapeSEC1:           SEC1,
	shapePKCS1Private:   PKCS1,
}

// checkDER verifies that data is exactly one complete DER element, and tells
// a truncated file (the header announces more bytes than there are) from
// other damage.
func checkDER(data []byte) error {
	s := cryptobyte.String(data)
	var elem cryptobyte.String
	var tag cbasn1.Tag
	if s.ReadAnyASN1Element(&elem, &tag) {
		if len(s) > 0 {
			return fmt.Errorf("%w: %s of trailing data after the DER structure", ErrMalformed, plural(len(s), "byte", "bytes"))
		}
		return nil
	}
	total, ok := derLength(data)
	switch {
	case !ok:
		return fmt.Errorf("%w: invalid DER length header", ErrMalformed)
	case total > len(data):
		return fmt.Errorf("%w: DER structure announces %d bytes, only %d present", ErrTruncated, total, len(data))
	}
	return fmt.Errorf("%w: invalid DER encoding", ErrMalformed)
}

// derLength returns the total length (header included) that the DER header
// at the start of data announces.
func derLength(data []byte) (int, bool) {
	if len(data) < 2 || data[0]&0x1f == 0x1f {
		return 0, false
	}
	b := int(data[1])
	if b < 0x80 {
		return 2 + b, true
	}
	n := b & 0x7f
	if n == 0 || n > 4 || len(data) < 2+n {
		return 0, false
	}
	length := 0
	for _, c := range data[2 : 2+n] {
		length = length<<8 | int(c)
	}
	return 2 + n + length, true
}

// derError explains why a structure of a known shape did not parse.
func derError(what string, der []byte, err error) error {
	if cerr := checkDER(der); cerr != nil {
		return fmt.Errorf("parsing %s: %w", what, cerr)
	}
	return fmt.Errorf("%w: parsing %s: %w", ErrMalformed, what, err)
}

// classifyDER reads the outline of a DER structure. The structures differ
// in their first elements:
//
//	Certificate, CSR, CRL   SEQUENCE { SEQUENCE tbs, SEQUENCE alg, BIT STRING }
//	PKCS#8                  SEQUENCE { INTEGER 0|1, SEQUENCE alg, OCTET STRING ... }
//	encrypted PKCS#8        SEQUENCE { SEQUENCE alg, OCTET STRING }
//	SEC1                    SEQUENCE { INTEGER 1, OCTET STRING ... }
//	PKCS#1 private          SEQUENCE { INTEGER 0, INTEGER n ... }
//	SubjectPublicKeyInfo    SEQUENCE { SEQUENCE alg, BIT STRING }
//	PKCS#1 public           SEQUENCE { INTEGER n, INTEGER e }
//	PKCS#12 (RFC 7292)      SEQUENCE { INTEGER 3, SEQUENCE { OID data ... } ... }
func classifyDER(der []byte) derShape {
	s := cryptobyte.String(der)
	var seq cryptobyte.String
	if !s.ReadASN1(&seq, cbasn1.SEQUENCE) {
		return shapeUnknown
	}
	if seq.PeekASN1Tag(cbasn1.INTEGER) {
		return classifyVersioned(seq)
	}
	var first cryptobyte.String
	if !seq.ReadASN1(&first, cbasn1.SEQUENCE) {
		return shapeUnknown
	}
	if first.PeekASN1Tag(cbasn1.OBJECT_IDENTIFIER) {
		switch {
		case seq.PeekASN1Tag(cbasn1.BIT_STRING):
			return shapePKIX
		case seq.PeekASN1Tag(cbasn1.OCTET_STRING):
			return shapePKCS8Encrypted
		}
		return shapeUnknown
	}
	if !seq.PeekASN1Tag(cbasn1.SEQUENCE) {
		return shapeUnknown
	}
	return classifyTBS(first)
}

func classifyVersioned(seq cryptobyte.String) derShape {
	// A failed cryptobyte read still consumes the element: read the
	// INTEGER as bytes, then decide.
	var first cryptobyte.String
	if !seq.ReadASN1(&first, cbasn1.INTEGER) {
		return shapeUnknown
	}
	version := -1 // a big INTEGER, such as an RSA modulus
	if len(first) == 1 {
		version = int(first[0])
	}
	switch {
	case version == 3 && seq.PeekASN1Tag(cbasn1.SEQUENCE):
		var authSafe cryptobyte.String
		var oid asn1.ObjectIdentifier
		if seq.ReadASN1(&authSafe, cbasn1.SEQUENCE) && authSafe.ReadASN1ObjectIdentifier(&oid) && oid.Equal(oidData) {
			return shapePKCS12
		}
	case (version == 0 || version == 1) && seq.PeekASN1Tag(cbasn1.SEQUENCE):
		return shapePKCS8
	case version == 1 && seq.PeekASN1Tag(cbasn1.OCTET_STRING):
		return shapeSEC1
	case version == 0 && seq.PeekASN1Tag(cbasn1.INTEGER):
		return shapePKCS1Private
	case seq.PeekASN1Tag(cbasn1.INTEGER):
		var e cryptobyte.String
		if seq.ReadASN1(&e, cbasn1.INTEGER) && seq.Empty() {
			return shapePKCS1Public
		}
	}
	return shapeUnknown
}

// classifyTBS tells the three signed structures apart by their "to be
// signed" part:
//
//	TBSCertificate  [0] version?, INTEGER serial, SEQUENCE alg, Name issuer, SEQUENCE validity ...
//	TBSCertList     INTEGER version?, SEQUENCE alg, Name issuer, Time thisUpdate ...
//	CertReqInfo     INTEGER 0, Name subject, SEQUENCE spki, [0] attributes
func classifyTBS(tbs cryptobyte.String) derShape {
	if tbs.PeekASN1Tag(cbasn1.Tag(0).Constructed().ContextSpecific()) {
		return shapeCertificate
	}
	if tbs.PeekASN1Tag(cbasn1.INTEGER) {
		tbs.SkipASN1(cbasn1.INTEGER)
	}
	var next cryptobyte.String
	if !tbs.ReadASN1(&next, cbasn1.SEQUENCE) {
		return shapeUnknown
	}
	if next.Empty() || next.PeekASN1Tag(cbasn1.SET) {
		return shapeCSR
	}
	if !next.PeekASN1Tag(cbasn1.OBJECT_IDENTIFIER) {
		return shapeUnknown
	}
	var issuer cryptobyte.String
	if !tbs.ReadASN1(&issuer, cbasn1.SEQUENCE) {
		return shapeUnknown
	}
	switch {
	case tbs.PeekASN1Tag(cbasn1.UTCTime), tbs.PeekASN1Tag(cbasn1.GeneralizedTime):
		return shapeCRL
	case tbs.PeekASN1Tag(cbasn1.SEQUENCE):
		return shapeCertificate
	}
	return shapeUnknown
}
