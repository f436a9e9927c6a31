package formats

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"go.step.sm/crypto/pemutil"
)

// ErrWrongPassword is returned when an encrypted key does not decrypt with
// the password given.
var ErrWrongPassword = errors.New("wrong password")

// ErrPasswordRequired is returned when a key is encrypted and no password was
// given.
var ErrPasswordRequired = errors.New("the key is encrypted and no password was given")

// MarshalPrivateKeyPEM encodes key as a PKCS#8 PEM block. With a non-empty
// password the key is encrypted (PBES2, PBKDF2-SHA256, AES-256-CBC) and the
// block type is "ENCRYPTED PRIVATE KEY".
func MarshalPrivateKeyPEM(key crypto.PrivateKey, password []byte) ([]byte, error) {
	opts := []pemutil.Options{pemutil.WithPKCS8(true)}
	if len(password) > 0 {
		opts = append(opts, pemutil.WithPassword(password))
	}
	block, err := pemutil.Serialize(key, opts...)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return pem.EncodeToMemory(block), nil
}

// ParsePrivateKeyPEM decodes the first PEM block of data as a private key:
// PKCS#8 (plain or encrypted), SEC1 ("EC PRIVATE KEY") or PKCS#1 ("RSA
// PRIVATE KEY"). An encrypted key without a password gives
// ErrPasswordRequired; one that does not decrypt gives ErrWrongPassword.
func ParsePrivateKeyPEM(data, password []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	der := block.Bytes
	switch block.Type {
	case "ENCRYPTED PRIVATE KEY":
		if len(password) == 0 {
			return nil, ErrPasswordRequired
		}
		plain, err := pemutil.DecryptPKCS8PrivateKey(der, password)
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
	case "PRIVATE KEY":
		return parsePKCS8Signer(der)
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(der)
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(der)
	default:
		return nil, fmt.Errorf("PEM block is %q, not a private key", block.Type)
	}
}

func parsePKCS8Signer(der []byte) (crypto.Signer, error) {
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("parsing PKCS#8 private key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
	return signer, nil
}
