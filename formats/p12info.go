package formats

import (
	"encoding/asn1"
	"fmt"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// P12Encryption describes how a PKCS#12 bundle is protected. It is read
// from the bundle's outer structure (RFC 7292), which needs no password.
// Empty strings mean "not present": a bundle without certificates has no
// certificate encryption.
type P12Encryption struct {
	CertEncryption string `json:"certificate_encryption"`
	KeyEncryption  string `json:"key_encryption"`
	KDF            string `json:"kdf,omitempty"`
	Iterations     int    `json:"iterations,omitempty"`
	MAC            string `json:"mac"`
	MACIterations  int    `json:"mac_iterations,omitempty"`

	counts []pbeCount // every iteration count seen, for DecodeP12's limit
}

// String summarizes the protection, e.g. "PBES2 AES-256-CBC, SHA-256 MAC" or
// "pbeWithSHAAnd3-KeyTripleDES-CBC, SHA-1 MAC".
func (e *P12Encryption) String() string {
	mac := e.MAC + " MAC"
	if e.MAC == "none" {
		mac = "no MAC"
	}
	switch {
	case e.KeyEncryption == "" || e.CertEncryption == e.KeyEncryption:
		return e.CertEncryption + ", " + mac
	case e.CertEncryption == "":
		return e.KeyEncryption + ", " + mac
	}
	return fmt.Sprintf("certificates %s, key %s, %s", e.CertEncryption, e.KeyEncryption, mac)
}

var (
	oidEncryptedData = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 6}
	oidKeyBag        = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 10, 1, 1}
	oidShroudedKey   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 10, 1, 2}
	oidPBES2         = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2        = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidPBMAC1        = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 14}
)

var algNames = map[string]string{
	"1.2.840.113549.1.12.1.1": "pbeWithSHAAnd128BitRC4",
	"1.2.840.113549.1.12.1.2": "pbeWithSHAAnd40BitRC4",
	"1.2.840.113549.1.12.1.3": "pbeWithSHAAnd3-KeyTripleDES-CBC",
	"1.2.840.113549.1.12.1.4": "pbeWithSHAAnd2-KeyTripleDES-CBC",
	"1.2.840.113549.1.12.1.5": "pbeWithSHAAnd128BitRC2-CBC",
	"1.2.840.113549.1.12.1.6": "pbeWithSHAAnd40BitRC2-CBC",
	"2.16.840.1.101.3.4.1.2":  "AES-128-CBC",
	"2.16.840.1.101.3.4.1.22": "AES-192-CBC",
	"2.16.840.1.101.3.4.1.42": "AES-256-CBC",
	"1.2.840.113549.3.7":      "DES-EDE3-CBC",
	"1.2.840.113549.2.7":      "HMAC-SHA-1",
	"1.2.840.113549.2.9":      "HMAC-SHA-256",
	"1.2.840.113549.2.10":     "HMAC-SHA-384",
	"1.2.840.113549.2.11":     "HMAC-SHA-512",
	"1.3.14.3.2.26":           "SHA-1",
	"2.16.840.1.101.3.4.2.1":  "SHA-256",
	"2.16.840.1.101.3.4.2.2":  "SHA-384",
	"2.16.840.1.101.3.4.2.3":  "SHA-512",
	"1.2.840.113549.1.5.14":   "PBMAC1",
}

func algName(oid asn1.ObjectIdentifier) string {
	if s, ok := algNames[oid.String()]; ok {
		return s
	}
	return oid.String()
}

// P12EncryptionInfo reads the algorithms protecting a DER PKCS#12 bundle.
func P12EncryptionInfo(data []byte) (*P12Encryption, error) {
	data, err := normalizeDER(data)
	if err != nil || classifyDER(data) != shapePKCS12 {
		return nil, fmt.Errorf("reading PKCS#12 encryption: %w: not a PKCS#12 structure", ErrMalformed)
	}
	e, ok := readPFX(cryptobyte.String(data))
	if !ok {
		return nil, fmt.Errorf("reading PKCS#12 encryption: %w: invalid PFX structure", ErrMalformed)
	}
	return e, nil
}

// readPFX walks PFX { version, authSafe ContentInfo, macData MacData OPTIONAL }.
func readPFX(s cryptobyte.String) (*P12Encryption, bool) {
	e := &P12Encryption{MAC: "none"}
	var pfx, authSafe, oct cryptobyte.String
	var version int
	var ctype asn1.ObjectIdentifier
	if !s.ReadASN1(&pfx, cbasn1.SEQUENCE) || !pfx.ReadASN1Integer(&version) ||
		!pfx.ReadASN1(&authSafe, cbasn1.SEQUENCE) || !authSafe.ReadASN1ObjectIdentifier(&ctype) ||
		!authSafe.ReadASN1(&oct, cbasn1.Tag(0).Constructed().ContextSpecific()) {
		return nil, false
	}
	var safes cryptobyte.String
	if !oct.ReadASN1(&safes, cbasn1.OCTET_STRING) || !readBERSequence(&safes) {
		return nil, false
	}
	for !safes.Empty() {
		if !readContentInfo(&safes, e) {
			return nil, false
		}
	}
	if !pfx.Empty() && !readMacData(&pfx, e) {
		return nil, false
	}
	return e, true
}

func readContentInfo(s *cryptobyte.String, e *P12Encryption) bool {
	var ci, content cryptobyte.String
	var ctype asn1.ObjectIdentifier
	if !s.ReadASN1(&ci, cbasn1.SEQUENCE) || !ci.ReadASN1ObjectIdentifier(&ctype) ||
		!ci.ReadASN1(&content, cbasn1.Tag(0).Constructed().ContextSpecific()) {
		return false
	}
	if ctype.Equal(oidEncryptedData) {
		// EncryptedData { version, EncryptedContentInfo { type, alg, [0] data } }
		var ed, eci, alg cryptobyte.String
		var v int
		if !content.ReadASN1(&ed, cbasn1.SEQUENCE) || !ed.ReadASN1Integer(&v) ||
			!ed.ReadASN1(&eci, cbasn1.SEQUENCE) || !eci.SkipASN1(cbasn1.OBJECT_IDENTIFIER) ||
			!eci.ReadASN1(&alg, cbasn1.SEQUENCE) {
			return false
		}
		name, _, n := describePBE(alg)
		if e.CertEncryption == "" {
			e.CertEncryption = name
		}
		e.counts = append(e.counts, pbeCount{"the PKCS#12 certificate encryption", n})
		return true
	}
	if !ctype.Equal(oidData) {
		return true
	}
	var bags cryptobyte.String
	if !content.ReadASN1(&bags, cbasn1.OCTET_STRING) || !readBERSequence(&bags) {
		return false
	}
	for !bags.Empty() {
		var bag, value cryptobyte.String
		var id asn1.ObjectIdentifier
		if !bags.ReadASN1(&bag, cbasn1.SEQUENCE) || !bag.ReadASN1ObjectIdentifier(&id) ||
			!bag.ReadASN1(&value, cbasn1.Tag(0).Constructed().ContextSpecific()) {
			return false
		}
		switch {
		case id.Equal(oidKeyBag):
			e.KeyEncryption = "none"
		case id.Equal(oidShroudedKey):
			var epki, alg cryptobyte.String
			if !value.ReadASN1(&epki, cbasn1.SEQUENCE) || !epki.ReadASN1(&alg, cbasn1.SEQUENCE) {
				return false
			}
			e.KeyEncryption, e.KDF, e.Iterations = describePBE(alg)
			e.counts = append(e.counts, pbeCount{"the PKCS#12 key encryption", e.Iterations})
		}
	}
	return true
}

// describePBE names an encryption AlgorithmIdentifier: a PKCS#12 PBE scheme
// or PBES2 with its cipher, KDF and iteration count.
func describePBE(alg cryptobyte.String) (name, kdf string, iterations int) {
	var oid asn1.ObjectIdentifier
	if !alg.ReadASN1ObjectIdentifier(&oid) {
		return "unknown", "", 0
	}
	var params cryptobyte.String
	if !oid.Equal(oidPBES2) {
		// pkcs-12PbeParams { salt OCTET STRING, iterations INTEGER }
		if alg.ReadASN1(&params, cbasn1.SEQUENCE) && params.SkipASN1(cbasn1.OCTET_STRING) {
			readCount(&params, &iterations)
		}
		return algName(oid), "PKCS#12 KDF (SHA-1)", iterations
	}
	// PBES2-params { keyDerivationFunc AlgId, encryptionScheme AlgId }
	var kdfAlg, kdfParams, encAlg cryptobyte.String
	var kdfOID, encOID asn1.ObjectIdentifier
	if !alg.ReadASN1(&params, cbasn1.SEQUENCE) || !params.ReadASN1(&kdfAlg, cbasn1.SEQUENCE) ||
		!kdfAlg.ReadASN1ObjectIdentifier(&kdfOID) || !params.ReadASN1(&encAlg, cbasn1.SEQUENCE) ||
		!encAlg.ReadASN1ObjectIdentifier(&encOID) {
		return "PBES2", "", 0
	}
	name = "PBES2 " + algName(encOID)
	if !kdfOID.Equal(oidPBKDF2) || !kdfAlg.ReadASN1(&kdfParams, cbasn1.SEQUENCE) {
		return name, algName(kdfOID), 0
	}
	// PBKDF2-params { salt, iterationCount, keyLength OPTIONAL, prf DEFAULT hmacWithSHA1 }
	prf := "HMAC-SHA-1"
	if kdfParams.SkipASN1(cbasn1.OCTET_STRING) && readCount(&kdfParams, &iterations) {
		kdfParams.SkipOptionalASN1(cbasn1.INTEGER)
		var prfAlg cryptobyte.String
		var prfOID asn1.ObjectIdentifier
		if kdfParams.ReadASN1(&prfAlg, cbasn1.SEQUENCE) && prfAlg.ReadASN1ObjectIdentifier(&prfOID) {
			prf = algName(prfOID)
		}
	}
	return name, "PBKDF2-" + prf, iterations
}

// readMacData reads MacData { DigestInfo { AlgId, digest }, salt, iterations DEFAULT 1 }.
func readMacData(s *cryptobyte.String, e *P12Encryption) bool {
	var md, di, alg cryptobyte.String
	var oid asn1.ObjectIdentifier
	if !s.ReadASN1(&md, cbasn1.SEQUENCE) || !md.ReadASN1(&di, cbasn1.SEQUENCE) ||
		!di.ReadASN1(&alg, cbasn1.SEQUENCE) || !alg.ReadASN1ObjectIdentifier(&oid) {
		return false
	}
	e.MAC = algName(oid)
	e.MACIterations = 1
	if md.SkipASN1(cbasn1.OCTET_STRING) && md.PeekASN1Tag(cbasn1.INTEGER) {
		readCount(&md, &e.MACIterations)
	}
	if oid.Equal(oidPBMAC1) {
		// RFC 9579: the count is in PBMAC1-params { PBKDF2 AlgId, MAC AlgId }.
		e.MACIterations = 0
		var params, kdfAlg cryptobyte.String
		n := 0
		if alg.ReadASN1(&params, cbasn1.SEQUENCE) && params.ReadASN1(&kdfAlg, cbasn1.SEQUENCE) {
			// PBKDF2's AlgId { OID, { salt, iterationCount, ... } } reads
			// like a PKCS#12 PBE one.
			_, _, n = describePBE(kdfAlg)
		}
		e.counts = append(e.counts, pbeCount{"the PKCS#12 MAC (PBMAC1)", n})
		return true
	}
	e.counts = append(e.counts, pbeCount{"the PKCS#12 MAC", e.MACIterations})
	return true
}

// readBERSequence replaces s, the contents of an OCTET STRING, by the
// contents of the SEQUENCE it encodes, in DER or BER (as NSS writes).
func readBERSequence(s *cryptobyte.String) bool {
	der, err := normalizeDER(*s)
	if err != nil {
		return false
	}
	in := cryptobyte.String(der)
	return in.ReadASN1(s, cbasn1.SEQUENCE)
}
