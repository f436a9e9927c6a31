package formats

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"go.step.sm/crypto/pemutil"
)

// KeyData is a private key as found in a file. Signer is nil while the key
// is encrypted (Format.Encrypted()); Decrypt then gives the key.
type KeyData struct {
	Format KeyFormat
	Signer crypto.Signer

	der   []byte     // the stored DER (EncryptedPrivateKeyInfo when encrypted)
	block *pem.Block // legacy encrypted PEM only
}

// String describes the key, e.g. "SEC1 private key (ECDSA P-256)" or
// "encrypted PKCS#8 private key".
func (k *KeyData) String() string {
	if k.Signer == nil {
		return k.Format.String() + " private key"
	}
	return fmt.Sprintf("%s private key (%s)", k.Format, KeyType(k.Signer.Public()))
}

// Decrypt returns the key, decrypting it with password if it is encrypted.
// An encrypted key without a password gives ErrPasswordRequired; one that
// does not decrypt gives ErrWrongPassword, and one asking for more than
// MaxIterations an *IterationsError, before any key derivation.
func (k *KeyData) Decrypt(password []byte) (crypto.Signer, error) {
	if k.Signer != nil {
		return k.Signer, nil
	}
	if len(password) == 0 {
		return nil, ErrPasswordRequired
	}
	if k.Format == LegacyEncrypted {
		return decryptLegacy(k.block, password)
	}
	if err := checkPKCS8Iterations(k.der); err != nil {
		return nil, fmt.Errorf("decrypting private key: %w", err)
	}
	plain, err := pemutil.DecryptPKCS8PrivateKey(append([]byte(nil), k.der...), password)
	if err != nil {
		if errors.Is(err, x509.IncorrectPasswordError) {
			return nil, ErrWrongPassword
		}
		return nil, fmt.Errorf("decrypting private key: %w", err)
	}
	key, err := parsePKCS8Signer(plain)
	if err != nil {
		// CBC padding checks can pass by chance on a wrong password; the
		// plaintext is then noise that does not parse.
		return nil, ErrWrongPassword
	}
	return key, nil
}

func decryptLegacy(block *pem.Block, password []byte) (crypto.Signer, error) {
	plain, err := pemutil.DecryptPEMBlock(block, password)
	if err != nil {
		if errors.Is(err, x509.IncorrectPasswordError) {
			return nil, ErrWrongPassword
		}
		return nil, fmt.Errorf("decrypting private key: %w", err)
	}
	var key crypto.Signer
	if block.Type == "RSA PRIVATE KEY" {
		key, err = x509.ParsePKCS1PrivateKey(plain)
	} else {
		key, err = x509.ParseECPrivateKey(plain)
	}
	if err != nil {
		return nil, ErrWrongPassword
	}
	return key, nil
}

var pemKeyFormat = map[string]KeyFormat{
	"PRIVATE KEY":           PKCS8,
	"ENCRYPTED PRIVATE KEY": PKCS8Encrypted,
	"EC PRIVATE KEY":        SEC1,
	"RSA PRIVATE KEY":       PKCS1,
}

func keyFromPEM(block *pem.Block) (*KeyData, error) {
	format, ok := pemKeyFormat[block.Type]
	if !ok {
		return nil, fmt.Errorf("%w: PEM block %q is not a private key", ErrUnknownFormat, block.Type)
	}
	if block.Headers["Proc-Type"] == "4,ENCRYPTED" && (format == SEC1 || format == PKCS1) {
		return &KeyData{Format: LegacyEncrypted, der: block.Bytes, block: block}, nil
	}
	return keyFromDER(block.Bytes, format)
}

func keyFromDER(der []byte, format KeyFormat) (*KeyData, error) {
	k := &KeyData{Format: format, der: der}
	var err error
	switch format {
	case PKCS8Encrypted:
		if cerr := checkDER(der); cerr != nil {
			return nil, fmt.Errorf("parsing encrypted private key: %w", cerr)
		}
		return k, nil
	case PKCS8:
		k.Signer, err = parsePKCS8Signer(der)
	case SEC1:
		k.Signer, err = x509.ParseECPrivateKey(der)
	case PKCS1:
		k.Signer, err = x509.ParsePKCS1PrivateKey(der)
	}
	if err != nil {
		return nil, derError(format.String()+" private key", der, err)
	}
	return k, nil
}

func publicKeyFromDER(der []byte, pkcs1 bool) (*PublicKeyData, error) {
	if pkcs1 {
		pub, err := x509.ParsePKCS1PublicKey(der)
		if err != nil {
			return nil, derError("PKCS#1 public key", der, err)
		}
		return &PublicKeyData{Format: PKCS1, Key: pub}, nil
	}
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, derError("public key", der, err)
	}
	return &PublicKeyData{Format: PKIX, Key: pub}, nil
}

func parsePKCS8Signer(der []byte) (crypto.Signer, error) {
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
	return signer, nil
}

// KeyType names a public key's algorithm and size the way people say it:
// "ECDSA P-256", "RSA 2048", "Ed25519".
func KeyType(pub crypto.PublicKey) string {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		return "ECDSA " + k.Curve.Params().Name
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA %d", k.N.BitLen())
	case ed25519.PublicKey:
		return "Ed25519"
	}
	return fmt.Sprintf("unknown key type %T", pub)
}
