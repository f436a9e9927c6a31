package formats

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
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
	return EncodePrivateKey(key, PKCS8, PEM, password)
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
	if _, ok := pemKeyFormat[block.Type]; !ok {
		return nil, fmt.Errorf("PEM block is %q, not a private key", block.Type)
	}
	k, err := keyFromPEM(block)
	if err != nil {
		return nil, err
	}
	return k.Decrypt(password)
}

// PrivateKey returns the private key o holds (a key, or the key of a PEM
// bundle), calling password only when the key is encrypted. A nil password,
// or one that returns no password, gives ErrPasswordRequired for an
// encrypted key; errors of password are returned as they are. Anything but
// a key gives a *KindError naming what o is.
func (o *Object) PrivateKey(password func() ([]byte, error)) (crypto.Signer, error) {
	if o.Key == nil {
		return nil, &KindError{Want: KindPrivateKey, Found: "a " + o.String()}
	}
	var pw []byte
	if o.Key.Signer == nil && password != nil {
		var err error
		if pw, err = password(); err != nil {
			return nil, err
		}
	}
	return o.Key.Decrypt(pw)
}

// ParsePrivateKey returns the private key in data, whatever its encoding:
// PEM or DER, PKCS#8 (plain or encrypted), SEC1, PKCS#1, legacy encrypted
// PEM, the key of a PEM bundle, or the key of a PKCS#12 bundle. Anything
// else gives a *KindError naming what was found.
func ParsePrivateKey(data, password []byte) (crypto.Signer, error) {
	obj, err := Detect(data)
	if err != nil {
		return nil, err
	}
	switch obj.Kind {
	case KindPrivateKey, KindBundle:
		return obj.Key.Decrypt(password)
	case KindPKCS12:
		key, _, _, err := DecodeP12(obj.PKCS12, string(password))
		if err != nil {
			return nil, err
		}
		return key.(crypto.Signer), nil
	}
	return nil, &KindError{Want: KindPrivateKey, Found: "a " + obj.String()}
}

// EncodePrivateKey encodes key in the given format and encoding. A
// non-empty password encrypts it, which only PKCS#8 supports (PBES2,
// PBKDF2-SHA256, AES-256-CBC). SEC1 holds only ECDSA keys, PKCS#1 only RSA.
func EncodePrivateKey(key crypto.PrivateKey, format KeyFormat, enc Encoding, password []byte) ([]byte, error) {
	if len(password) > 0 && format != PKCS8 {
		return nil, fmt.Errorf("encrypting a %s key: only PKCS#8 keys can be encrypted", format)
	}
	var block *pem.Block
	var err error
	switch format {
	case PKCS8:
		opts := []pemutil.Options{pemutil.WithPKCS8(true)}
		if len(password) > 0 {
			opts = append(opts, pemutil.WithPassword(password))
		}
		block, err = pemutil.Serialize(key, opts...)
	case SEC1:
		k, ok := key.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("encoding private key: SEC1 holds only ECDSA keys, not %s", privateKeyType(key))
		}
		block, err = pemutil.Serialize(k)
	case PKCS1:
		k, ok := key.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("encoding private key: PKCS#1 holds only RSA keys, not %s", privateKeyType(key))
		}
		block, err = pemutil.Serialize(k)
	default:
		return nil, fmt.Errorf("encoding private key: cannot write the %s format", format)
	}
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	if enc == DER {
		return block.Bytes, nil
	}
	return pem.EncodeToMemory(block), nil
}

func privateKeyType(key crypto.PrivateKey) string {
	if s, ok := key.(crypto.Signer); ok {
		return KeyType(s.Public())
	}
	return fmt.Sprintf("unknown key type %T", key)
}

// KeyMatchesCertificate returns ErrKeyMismatch unless key is the private key
// of cert's public key.
func KeyMatchesCertificate(key crypto.PrivateKey, cert *x509.Certificate) error {
	s, ok := key.(crypto.Signer)
	if !ok {
		return fmt.Errorf("checking private key: unsupported key type %T", key)
	}
	pub, ok := s.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return ErrKeyMismatch
	}
	return nil
}
