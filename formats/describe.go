package formats

import (
	"crypto"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"math"
	"time"
)

// kindIDs are the stable names of kinds in JSON output.
var kindIDs = map[Kind]string{
	KindCertificate: "certificate",
	KindCSR:         "csr",
	KindCRL:         "crl",
	KindPrivateKey:  "private_key",
	KindPublicKey:   "public_key",
	KindPKCS12:      "pkcs12",
	KindBundle:      "bundle",
}

// Description is what `minica inspect` reports about a file, ready for
// encoding/json (snake_case keys) or for WriteText.
type Description struct {
	Summary      string            `json:"summary"`
	Kind         string            `json:"kind"` // certificate, csr, crl, private_key, public_key, pkcs12 or bundle
	Encoding     string            `json:"encoding"`
	Certificates []CertificateInfo `json:"certificates,omitempty"`
	CSR          *CSRInfo          `json:"csr,omitempty"`
	CRL          *CRLInfo          `json:"crl,omitempty"`
	Key          *KeyInfo          `json:"key,omitempty"`
	PublicKey    *KeyInfo          `json:"public_key,omitempty"`
	PKCS12       *P12Info          `json:"pkcs12,omitempty"`
	// KeyMatches is set when the file holds a decrypted private key and
	// certificates: whether the key belongs to the first certificate.
	KeyMatches *bool `json:"key_matches_certificate,omitempty"`
}

// CertificateInfo describes one certificate.
type CertificateInfo struct {
	Subject            string    `json:"subject"`
	Issuer             string    `json:"issuer"`
	SelfSigned         bool      `json:"self_signed"`
	DNSNames           []string  `json:"dns_names,omitempty"`
	IPAddresses        []string  `json:"ip_addresses,omitempty"`
	EmailAddresses     []string  `json:"email_addresses,omitempty"`
	URIs               []string  `json:"uris,omitempty"`
	NotBefore          time.Time `json:"not_before"`
	NotAfter           time.Time `json:"not_after"`
	DaysLeft           int       `json:"days_left"`
	Status             string    `json:"validity"`
	Key                string    `json:"key"`
	KeyUsage           []string  `json:"key_usage,omitempty"`
	ExtKeyUsage        []string  `json:"ext_key_usage,omitempty"`
	IsCA               bool      `json:"is_ca"`
	Serial             string    `json:"serial"`
	SerialColon        string    `json:"serial_colon"`
	SignatureAlgorithm string    `json:"signature_algorithm"`
	SHA256             string    `json:"sha256_fingerprint"`
	SHA1               string    `json:"sha1_fingerprint"`
	PublicKeySHA256    string    `json:"public_key_sha256"`
}

// CSRInfo describes a certificate request.
type CSRInfo struct {
	Subject            string   `json:"subject"`
	DNSNames           []string `json:"dns_names,omitempty"`
	IPAddresses        []string `json:"ip_addresses,omitempty"`
	EmailAddresses     []string `json:"email_addresses,omitempty"`
	URIs               []string `json:"uris,omitempty"`
	Key                string   `json:"key"`
	SignatureAlgorithm string   `json:"signature_algorithm"`
	SignatureValid     bool     `json:"signature_valid"`
	PublicKeySHA256    string   `json:"public_key_sha256"`
}

// CRLInfo describes a CRL. The signature is not checked: that needs the
// issuer's certificate. Delta, Indirect and DistributionPoint say when the
// CRL covers less than all certificates of its issuer.
type CRLInfo struct {
	Issuer             string     `json:"issuer"`
	Number             string     `json:"number,omitempty"`
	ThisUpdate         time.Time  `json:"this_update"`
	NextUpdate         *time.Time `json:"next_update,omitempty"`
	DaysLeft           *int       `json:"days_until_next_update,omitempty"`
	SignatureAlgorithm string     `json:"signature_algorithm"`
	AuthorityKeyID     string     `json:"authority_key_id,omitempty"`
	// Delta is set for a delta CRL (RFC 5280 section 5.2.4), which lists
	// only the changes since the CRL numbered BaseNumber.
	Delta      bool   `json:"delta,omitempty"`
	BaseNumber string `json:"base_crl_number,omitempty"`
	// Indirect is set when the CRL may list other issuers' certificates:
	// its distribution point says indirectCRL, or an entry names an issuer.
	Indirect          bool                      `json:"indirect,omitempty"`
	DistributionPoint *IssuingDistributionPoint `json:"issuing_distribution_point,omitempty"`
	Entries           []CRLEntry                `json:"entries"`
}

// CRLEntry is one revoked certificate. Reason is empty when the entry has
// no reason code extension.
type CRLEntry struct {
	Serial    string    `json:"serial"`
	RevokedAt time.Time `json:"revoked_at"`
	Reason    string    `json:"reason,omitempty"`
}

// KeyInfo describes a private or public key. Type and the fingerprint are
// empty for a key still encrypted.
type KeyInfo struct {
	Type            string `json:"type,omitempty"`
	Format          string `json:"format"`
	Encrypted       bool   `json:"encrypted"`
	PublicKeySHA256 string `json:"public_key_sha256,omitempty"`
}

// P12Info describes a PKCS#12 bundle. Without the password only the
// encryption is known and Locked is true; the key and certificates then
// appear in Description.Key and Description.Certificates (leaf first).
type P12Info struct {
	Encryption  *P12Encryption `json:"encryption"`
	Protection  string         `json:"protection"`
	Locked      bool           `json:"locked"`
	HasKey      bool           `json:"has_key"`
	ChainLength int            `json:"chain_length"`
}

// Describe detects what data holds and describes it; see Detect for the
// formats. now is the reference for days left. password decrypts an
// encrypted key or a PKCS#12 bundle; without it their contents are reported
// as locked, and a wrong one gives ErrWrongPassword.
func Describe(data, password []byte, now time.Time) (*Description, error) {
	obj, err := Detect(data)
	if err != nil {
		return nil, err
	}
	d := &Description{Summary: obj.String(), Kind: kindIDs[obj.Kind], Encoding: obj.Encoding.String()}
	for _, c := range obj.Certificates {
		d.Certificates = append(d.Certificates, describeCertificate(c, now))
	}
	switch {
	case obj.CSR != nil:
		d.CSR = describeCSR(obj.CSR)
	case obj.CRL != nil:
		d.CRL = describeCRL(obj.CRL, now)
	case obj.PublicKey != nil:
		d.PublicKey = &KeyInfo{Type: KeyType(obj.PublicKey.Key), Format: obj.PublicKey.Format.String(),
			PublicKeySHA256: publicKeyFingerprint(obj.PublicKey.Key)}
	case obj.PKCS12 != nil:
		return describeP12(d, obj.PKCS12, password, now)
	}
	if obj.Key != nil {
		signer, err := obj.Key.Decrypt(password)
		switch {
		case errors.Is(err, ErrPasswordRequired):
		case err != nil:
			return nil, err
		}
		d.Key = describeKey(obj.Key.Format, signer)
		if signer != nil && len(obj.Certificates) > 0 {
			ok := KeyMatchesCertificate(signer, obj.Certificates[0]) == nil
			d.KeyMatches = &ok
		}
	}
	return d, nil
}

func describeP12(d *Description, data, password []byte, now time.Time) (*Description, error) {
	enc, err := P12EncryptionInfo(data)
	if err != nil {
		return nil, err
	}
	d.PKCS12 = &P12Info{Encryption: enc, Protection: enc.String(), Locked: len(password) == 0}
	if len(password) == 0 {
		return d, nil
	}
	key, leaf, chain, err := DecodeP12(data, string(password))
	if err != nil {
		return nil, err
	}
	d.PKCS12.HasKey, d.PKCS12.ChainLength = true, len(chain)
	matches := true // DecodeP12 picks the leaf by the key
	d.KeyMatches = &matches
	d.Key = describeKey(PKCS8Encrypted, key.(crypto.Signer))
	for _, c := range append([]*x509.Certificate{leaf}, chain...) {
		d.Certificates = append(d.Certificates, describeCertificate(c, now))
	}
	return d, nil
}

func describeKey(format KeyFormat, signer crypto.Signer) *KeyInfo {
	k := &KeyInfo{Format: format.String(), Encrypted: format.Encrypted()}
	if signer != nil {
		k.Type = KeyType(signer.Public())
		k.PublicKeySHA256 = publicKeyFingerprint(signer.Public())
	}
	return k
}

// daysLeft counts whole days from now until t, negative once t is past.
func daysLeft(t, now time.Time) int {
	return int(math.Floor(t.Sub(now).Hours() / 24))
}

// FingerprintSHA256 returns the SHA-256 of der as uppercase colon-separated
// hex, as openssl x509 -fingerprint -sha256 prints it.
func FingerprintSHA256(der []byte) string {
	sum := sha256.Sum256(der)
	return colonHex(sum[:], true)
}

// FingerprintSHA1 returns the SHA-1 of der as uppercase colon-separated hex.
func FingerprintSHA1(der []byte) string {
	sum := sha1.Sum(der)
	return colonHex(sum[:], true)
}

func publicKeyFingerprint(pub crypto.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return ""
	}
	return FingerprintSHA256(der)
}
