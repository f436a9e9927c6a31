package ca

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// The errors of CA keys in PKCS#11 tokens. Each comes wrapped in a message
// that names the module, token or object concerned.
var (
	// ErrPKCS11Unsupported is returned for a key URI by a minica built
	// without cgo, which cannot load a PKCS#11 module.
	ErrPKCS11Unsupported = errors.New("PKCS#11 keys need a minica built with cgo; this binary was built without cgo")
	// ErrModuleNotFound: the key URI's module-path names no file.
	ErrModuleNotFound = errors.New("no such file")
	// ErrTokenNotFound: the module has no token the key URI names.
	ErrTokenNotFound = errors.New("the module has no such token")
	// ErrWrongPIN: the token refused the PIN.
	ErrWrongPIN = errors.New("wrong PIN")
	// ErrPINLocked: the token locked its user PIN after too many wrong ones.
	ErrPINLocked = errors.New("the token's user PIN is locked (too many wrong PINs): unlock it with the token's SO PIN")
	// ErrNotModule: the key URI's module-path is no PKCS#11 library.
	ErrNotModule = errors.New("it is not a PKCS#11 library (dlopen failed)")
	// ErrModuleInit: the module's C_Initialize failed, often for its own
	// configuration (SoftHSM2: SOFTHSM2_CONF).
	ErrModuleInit = errors.New("the module failed to initialise")
	// ErrKeyNotFound: the token holds no private key the key URI names.
	ErrKeyNotFound = errors.New("the token holds no such private key")
	// ErrKeyExists is returned by Init without InitOptions.ExistingKey when
	// the token already holds a key of the label or id of the key URI.
	ErrKeyExists = errors.New("minica makes a new key only under a label and id no other key has")
	// ErrPINRequired: a token key and no PIN.
	ErrPINRequired = errors.New("the PIN of the PKCS#11 token is required")
)

// p11Token is an open PKCS#11 session, logged in as the user; openToken
// (pkcs11_cgo.go, or pkcs11_nocgo.go without cgo) makes one.
type p11Token interface {
	// findKeys returns every private key with a public half of this CKA_ID
	// and CKA_LABEL (nil matches any).
	findKeys(id, label []byte) ([]p11Key, error)
	// generate creates a sensitive, non-extractable signing key pair.
	generate(kt KeyType, id, label []byte) (p11Key, error)
	close() error
}

// p11Key is a private key in a token.
type p11Key interface {
	crypto.Signer
	info() (p11KeyInfo, error)
	destroy() error
}

// p11KeyInfo is what minica checks of a key in a token.
type p11KeyInfo struct {
	ID, Label                       []byte
	Sensitive, Extractable, CanSign bool
}

// tokenError words an error of openToken for the key URI u.
func tokenError(u *KeyURI, err error) error {
	switch {
	case errors.Is(err, ErrPKCS11Unsupported):
		return err
	case errors.Is(err, ErrModuleNotFound), errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("loading PKCS#11 module %q (module-path of the key URI): %w", u.ModulePath, ErrModuleNotFound)
	case errors.Is(err, ErrNotModule), errors.Is(err, ErrModuleInit):
		return fmt.Errorf("loading PKCS#11 module %q (module-path of the key URI): %w", u.ModulePath, err)
	case errors.Is(err, ErrWrongPIN), errors.Is(err, ErrPINLocked):
		return fmt.Errorf("logging in to %s: %w", u.TokenName(), err)
	}
	return fmt.Errorf("opening %s in module %q: %w", u.TokenName(), u.ModulePath, err)
}

// openTokenLogged opens the token of u and logs in with pin.
func openTokenLogged(u *KeyURI, pin []byte) (p11Token, error) {
	if len(pin) == 0 {
		return nil, fmt.Errorf("logging in to %s: %w", u.TokenName(), ErrPINRequired)
	}
	tok, err := openToken(u, pin)
	if err != nil {
		return nil, tokenError(u, err)
	}
	return tok, nil
}

// findOne returns the one private key of the token that u names: none is
// ErrKeyNotFound, more than one an error asking for an id.
func findOne(tok p11Token, u *KeyURI) (p11Key, error) {
	keys, err := tok.findKeys(u.ID, []byte(u.Object))
	if err != nil {
		return nil, fmt.Errorf("looking up %s in %s: %w", u.ObjectName(), u.TokenName(), err)
	}
	switch len(keys) {
	case 0:
		return nil, fmt.Errorf("looking up the key with %s in %s: %w", u.ObjectName(), u.TokenName(), ErrKeyNotFound)
	case 1:
		return keys[0], nil
	}
	return nil, fmt.Errorf("%s holds %d private keys with %s: add the id of one to the key URI", u.TokenName(), len(keys), u.ObjectName())
}

// tokenInit is Init's CA key in a token: the session, and the key once
// found or made.
type tokenInit struct {
	tok     p11Token
	uri     *KeyURI
	kt      KeyType
	key     p11Key
	created bool
}

// openTokenInit opens the token of o.KeyURI for Init and checks, before
// anything is written, that the key is there (ExistingKey) or that its name
// is free. A new key is made by signer.
func openTokenInit(o *InitOptions) (*tokenInit, error) {
	u := *o.KeyURI
	if !o.ExistingKey {
		switch o.KeyType {
		case ECDSAP256, ECDSAP384, RSA2048, RSA3072, RSA4096:
		default:
			return nil, fmt.Errorf("minica cannot create %s keys in a PKCS#11 token: choose ecdsa-p256, ecdsa-p384, rsa-2048, rsa-3072 or rsa-4096", o.KeyType)
		}
		if u.Object == "" {
			return nil, errors.New("a new key in a PKCS#11 token needs a label: add object=NAME to the key URI")
		}
	}
	tok, err := openTokenLogged(&u, o.PIN)
	if err != nil {
		return nil, err
	}
	t := &tokenInit{tok: tok, uri: &u, kt: o.KeyType}
	if err := t.check(o.ExistingKey); err != nil {
		tok.close()
		return nil, err
	}
	return t, nil
}

func (t *tokenInit) check(existing bool) error {
	u := t.uri
	if existing {
		key, err := findOne(t.tok, u)
		if err != nil {
			return err
		}
		info, err := key.info()
		if err != nil {
			return fmt.Errorf("reading the attributes of %s in %s: %w", u.ObjectName(), u.TokenName(), err)
		}
		if !info.Sensitive || !info.CanSign {
			return fmt.Errorf("the key with %s in %s is not a sensitive signing key (CKA_SENSITIVE and CKA_SIGN must be true): minica makes CA keys only of keys the token never reveals", u.ObjectName(), u.TokenName())
		}
		if err := CheckPublicKey(key.Public()); err != nil {
			return fmt.Errorf("the key with %s in %s: %w", u.ObjectName(), u.TokenName(), err)
		}
		// Pin the key exactly: the stored URI names its label and id both.
		u.ID, u.Object = info.ID, string(info.Label)
		t.key = key
		return nil
	}
	// A new key must not share the label or the id of another one, so that
	// the URI stored names it alone, now and later.
	taken := func(what string, id, label []byte) error {
		keys, err := t.tok.findKeys(id, label)
		if err != nil {
			return fmt.Errorf("looking up %s in %s: %w", what, u.TokenName(), err)
		}
		if len(keys) > 0 {
			return fmt.Errorf("%s already holds a key with %s: %w", u.TokenName(), what, ErrKeyExists)
		}
		return nil
	}
	if err := taken(fmt.Sprintf("object %q", u.Object), nil, []byte(u.Object)); err != nil {
		return err
	}
	if len(u.ID) > 0 {
		return taken("id "+hex.EncodeToString(u.ID), u.ID, nil)
	}
	return nil
}

// signer returns the key, generating it in the token when it is new; a
// new key without an id in the URI gets 16 random bytes as its CKA_ID.
func (t *tokenInit) signer() (crypto.Signer, error) {
	if t.key != nil {
		return t.key, nil
	}
	if len(t.uri.ID) == 0 {
		t.uri.ID = make([]byte, 16)
		if _, err := rand.Read(t.uri.ID); err != nil {
			return nil, fmt.Errorf("generating a key id: %w", err)
		}
	}
	key, err := t.tok.generate(t.kt, t.uri.ID, []byte(t.uri.Object))
	if err != nil {
		return nil, fmt.Errorf("generating a %s key with %s in %s: %w", t.kt, t.uri.ObjectName(), t.uri.TokenName(), err)
	}
	t.key, t.created = key, true
	return key, nil
}

// abort deletes the key from the token if Init generated it.
func (t *tokenInit) abort() error {
	if !t.created {
		return nil
	}
	if err := t.key.destroy(); err != nil {
		return fmt.Errorf("deleting the new key with %s from %s: %w", t.uri.ObjectName(), t.uri.TokenName(), err)
	}
	return nil
}

// loadKeyURI reads ca.key-uri when there is one.
func (c *CA) loadKeyURI() error {
	u, err := readKeyURI(c.dir)
	c.keyURI = u
	return err
}

// readKeyURI reads ca.key-uri of d; nil when there is none.
func readKeyURI(d *Dir) (*KeyURI, error) {
	data, err := d.ReadFile(keyURIFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading CA key URI %q: %w", d.Join(keyURIFile), err)
	}
	u, err := ParseKeyURI(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("corrupt CA key URI %q: %w", d.Join(keyURIFile), err)
	}
	return u, nil
}

// loadTokenSigner opens the token of the CA key with pin and finds the key,
// which must be the one of the CA certificate. The session stays open until
// Close; the signer opens it again, the same way, when the token loses it
// (see tokenSigner), and implements SignerStatus.
func (c *CA) loadTokenSigner(pin []byte) (crypto.Signer, error) {
	u := c.keyURI
	pin = bytes.Clone(pin) // the caller may clear its copy
	open := func() (p11Token, p11Key, error) {
		tok, err := openTokenLogged(u, pin)
		if err != nil {
			return nil, nil, err
		}
		key, err := findOne(tok, u)
		if errors.Is(err, ErrKeyNotFound) {
			err = fmt.Errorf("%w, and it is the CA key of %q (%s): was it deleted, or is this another token with the same label?", err, c.dir.Path(), keyURIFile)
		}
		if err != nil {
			tok.close()
			return nil, nil, err
		}
		if !publicKeysEqual(key.Public(), c.Cert.PublicKey) {
			tok.close()
			return nil, nil, fmt.Errorf("the key with %s in %s does not match the CA certificate %q", u.ObjectName(), u.TokenName(), c.dir.Join(certFile))
		}
		return tok, key, nil
	}
	tok, key, err := open()
	if err != nil {
		return nil, err
	}
	s := newTokenSigner(u.TokenName(), tok, key, open, sessionLost, c.Now)
	c.tokens = append(c.tokens, s)
	return s, nil
}
