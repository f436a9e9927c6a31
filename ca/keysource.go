package ca

import (
	"crypto"
	"encoding/pem"
	"errors"
	"fmt"
	"runtime"

	"minica/formats"
)

// KeyKind says where a CA key is kept, and so which secret opens it.
type KeyKind int

// The places a CA key is kept.
const (
	// KeyInFile is an unencrypted PEM key file (ca.key): no secret.
	KeyInFile KeyKind = iota + 1
	// KeyInEncryptedFile is an encrypted PKCS#8 key file (ca.key): its
	// password opens it.
	KeyInEncryptedFile
	// KeyInToken is a key in a PKCS#11 token (ca.key-uri): the token's
	// PIN opens it.
	KeyInToken
)

// KeySource says where a CA key is kept, for the words of prompts and
// messages; OpenSigner opens the key wherever it is.
type KeySource struct {
	Kind KeyKind
	// URI is the key's PKCS#11 URI when Kind is KeyInToken, else nil.
	URI *KeyURI
}

// Supported is nil when this build can open a key of s; a key in a token
// needs a build with cgo, else the error wraps ErrPKCS11Unsupported.
func (s KeySource) Supported() error {
	if s.Kind == KeyInToken && !PKCS11Supported {
		return fmt.Errorf("the CA key is in %s: %w", s.URI.TokenName(), ErrPKCS11Unsupported)
	}
	return nil
}

// SecretFunc returns the secret that opens a key of src: the password of
// an encrypted key file (KeyInEncryptedFile) or the PIN of a token
// (KeyInToken). Its error is returned as it is by the function that
// called it.
type SecretFunc func(src KeySource) ([]byte, error)

// FixedSecret is a SecretFunc that returns secret whatever the key, for a
// caller that holds the secret already; nil is no secret.
func FixedSecret(secret []byte) SecretFunc {
	return func(KeySource) ([]byte, error) { return secret, nil }
}

// KeySecret is the SecretFunc of the key Init or InitPending made with o:
// o.PIN for a key in a token, else o.Password.
func (o *InitOptions) KeySecret(src KeySource) ([]byte, error) {
	if src.Kind == KeyInToken {
		return o.PIN, nil
	}
	return o.Password, nil
}

// KeySource tells where the CA key is kept. For a key file it reads the
// file, which must not be readable by group or others, to tell whether it
// is encrypted.
func (c *CA) KeySource() (KeySource, error) {
	src, _, err := c.keySource()
	return src, err
}

// keySource is KeySource, with the key file's content when there is one.
func (c *CA) keySource() (KeySource, []byte, error) {
	if c.keyURI != nil {
		return KeySource{Kind: KeyInToken, URI: c.keyURI}, nil, nil
	}
	data, err := c.readKeyFile()
	if err != nil {
		return KeySource{}, nil, err
	}
	return fileKeySource(data), data, nil
}

// fileKeySource is the source of a key file of content data.
func fileKeySource(data []byte) KeySource {
	if block, _ := pem.Decode(data); block != nil && block.Type == "ENCRYPTED PRIVATE KEY" {
		return KeySource{Kind: KeyInEncryptedFile}
	}
	return KeySource{Kind: KeyInFile}
}

func (c *CA) readKeyFile() ([]byte, error) {
	info, err := c.dir.Stat(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading CA key %q: %w", c.dir.Join(keyFile), err)
	}
	// Windows has no Unix modes (Go reports 0666 or 0444 there): the
	// directory's ACL protects the key, so the check is Unix-only.
	if perm := info.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("CA key %q has mode %04o: group and others must have no access (chmod 600 it)", c.dir.Join(keyFile), perm)
	}
	data, err := c.dir.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading CA key %q: %w", c.dir.Join(keyFile), err)
	}
	return data, nil
}

// OpenSigner opens the CA key wherever it is kept (see KeySource), calling
// secret once for its password or PIN when it needs one, and checks that
// it is the key of the CA certificate. A nil secret is no secret.
//
// A wrong password gives an error matching formats.ErrWrongPassword, an
// encrypted key and no password formats.ErrPasswordRequired. A key in a
// token that this build cannot use fails with ErrPKCS11Unsupported before
// secret is called; the other errors of a token are those of tokenkey.go
// (ErrWrongPIN, ErrKeyNotFound, ...), and its session stays open until
// Close. A signer of a token implements SignerStatus.
//
// This is the one place where a signing command gets the CA key: issuing,
// signing CSRs and intermediates, revoking, CRLs and serve's OCSP and CRL
// re-signing all take the crypto.Signer it returns.
func (c *CA) OpenSigner(secret SecretFunc) (crypto.Signer, error) {
	src, data, err := c.keySource()
	if err != nil {
		return nil, err
	}
	if err := src.Supported(); err != nil {
		return nil, err
	}
	var pw []byte
	if src.Kind != KeyInFile && secret != nil {
		if pw, err = secret(src); err != nil {
			return nil, err
		}
	}
	if src.Kind == KeyInToken {
		return c.loadTokenSigner(pw)
	}
	return c.parseKeyFile(data, pw)
}

// LoadSigner is OpenSigner with the secret given: the password of an
// encrypted key file or the PIN of a token, nil for a key that needs none.
func (c *CA) LoadSigner(secret []byte) (crypto.Signer, error) {
	return c.OpenSigner(FixedSecret(secret))
}

// parseKeyFile decrypts the key file's content data with password when it
// is encrypted and checks that it is the CA certificate's key.
func (c *CA) parseKeyFile(data, password []byte) (crypto.Signer, error) {
	key, err := formats.ParsePrivateKeyPEM(data, password)
	if errors.Is(err, formats.ErrWrongPassword) || errors.Is(err, formats.ErrPasswordRequired) {
		return nil, fmt.Errorf("CA key %q: %w", c.dir.Join(keyFile), err)
	}
	if err != nil {
		return nil, fmt.Errorf("corrupt CA key %q: %w", c.dir.Join(keyFile), err)
	}
	if !publicKeysEqual(key.Public(), c.Cert.PublicKey) {
		return nil, fmt.Errorf("CA key %q does not match the CA certificate %q", c.dir.Join(keyFile), c.dir.Join(certFile))
	}
	return key, nil
}
