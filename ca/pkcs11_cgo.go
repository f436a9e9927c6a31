//go:build cgo && !nopkcs11

package ca

import (
	"crypto"
	"crypto/elliptic"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ThalesGroup/crypto11"
	"github.com/miekg/pkcs11"
)

// PKCS11Supported reports whether this build can use CA keys in PKCS#11
// tokens: only a cgo build can load a module.
const PKCS11Supported = true

// openToken loads the module of u, finds its token and logs in with pin,
// through crypto11 (which keeps a pool of sessions, so that serve signs
// from several goroutines).
func openToken(u *KeyURI, pin []byte) (p11Token, error) {
	// dlopen says nothing of why it failed: look for the file first.
	if _, err := os.Stat(u.ModulePath); err != nil {
		return nil, err
	}
	ctx, err := crypto11.Configure(&crypto11.Config{
		Path:        u.ModulePath,
		TokenLabel:  u.Token,
		TokenSerial: u.Serial,
		SlotNumber:  u.SlotID,
		Pin:         string(pin),
		MaxSessions: 8,
		// Bounded: a busy token fails a signature rather than hang.
		PoolWaitTimeout: 30 * time.Second,
	})
	if err == nil {
		return &c11Token{ctx: ctx}, nil
	}
	var code pkcs11.Error
	isCode := errors.As(err, &code)
	switch {
	case isCode && (code == pkcs11.CKR_PIN_INCORRECT || code == pkcs11.CKR_PIN_LEN_RANGE):
		return nil, ErrWrongPIN
	case isCode && code == pkcs11.CKR_PIN_LOCKED:
		return nil, ErrPINLocked
	// crypto11 keeps these two errors to itself; its messages are stable.
	case strings.Contains(err.Error(), "could not find PKCS#11 token"):
		return nil, ErrTokenNotFound
	case strings.Contains(err.Error(), "failed to open module"):
		return nil, ErrNotModule
	case strings.Contains(err.Error(), "failed to initialize module"):
		reason := err.Error()
		if isCode {
			reason = code.Error()
		}
		return nil, fmt.Errorf("%w (C_Initialize: %s)", ErrModuleInit, strings.TrimPrefix(reason, "pkcs11: "))
	}
	return nil, err
}

// sessionLost reports whether err, of a key in a token, says that its
// session or its handle is no longer valid: the token went away (and may
// be back: a network HSM's failover, a token pulled and put back), the
// module lost its state, the session was closed or logged out. Opening the
// token again and finding the key again may help; nothing less does.
func sessionLost(err error) bool {
	var code pkcs11.Error
	if !errors.As(err, &code) {
		return false
	}
	switch code {
	case pkcs11.CKR_OBJECT_HANDLE_INVALID, pkcs11.CKR_KEY_HANDLE_INVALID,
		pkcs11.CKR_SESSION_HANDLE_INVALID, pkcs11.CKR_SESSION_CLOSED, pkcs11.CKR_USER_NOT_LOGGED_IN,
		pkcs11.CKR_DEVICE_REMOVED, pkcs11.CKR_DEVICE_ERROR, pkcs11.CKR_TOKEN_NOT_PRESENT,
		pkcs11.CKR_TOKEN_NOT_RECOGNIZED, pkcs11.CKR_CRYPTOKI_NOT_INITIALIZED, pkcs11.CKR_GENERAL_ERROR:
		return true
	}
	return false
}

type c11Token struct{ ctx *crypto11.Context }

func (t *c11Token) findKeys(id, label []byte) ([]p11Key, error) {
	signers, err := t.ctx.FindKeyPairs(id, label)
	if err != nil {
		return nil, err
	}
	keys := make([]p11Key, len(signers))
	for i, s := range signers {
		keys[i] = &c11Key{s: s, ctx: t.ctx}
	}
	return keys, nil
}

func (t *c11Token) generate(kt KeyType, id, label []byte) (p11Key, error) {
	public, err := crypto11.NewAttributeSetWithIDAndLabel(id, label)
	if err != nil {
		return nil, err
	}
	private := public.Copy()
	// Stated, not left to crypto11's defaults: the key is a token object
	// that only signs and never leaves the token in the clear or wrapped.
	for _, a := range []struct {
		set   crypto11.AttributeSet
		typ   crypto11.AttributeType
		value bool
	}{
		{private, crypto11.CkaToken, true}, {private, crypto11.CkaPrivate, true},
		{private, crypto11.CkaSensitive, true}, {private, crypto11.CkaExtractable, false},
		{private, crypto11.CkaSign, true}, {private, crypto11.CkaDecrypt, false},
		{public, crypto11.CkaToken, true}, {public, crypto11.CkaVerify, true},
		{public, crypto11.CkaEncrypt, false},
	} {
		if err := a.set.Set(a.typ, a.value); err != nil {
			return nil, err
		}
	}
	var s crypto11.Signer
	switch kt {
	case ECDSAP256:
		s, err = t.ctx.GenerateECDSAKeyPairWithAttributes(public, private, elliptic.P256())
	case ECDSAP384:
		s, err = t.ctx.GenerateECDSAKeyPairWithAttributes(public, private, elliptic.P384())
	case RSA2048, RSA3072, RSA4096:
		bits := map[KeyType]int{RSA2048: 2048, RSA3072: 3072, RSA4096: 4096}[kt]
		s, err = t.ctx.GenerateRSAKeyPairWithAttributes(public, private, bits)
	default:
		return nil, fmt.Errorf("unsupported key type %s", kt)
	}
	if err != nil {
		return nil, err
	}
	return &c11Key{s: s, ctx: t.ctx}, nil
}

func (t *c11Token) close() error { return t.ctx.Close() }

// c11Key is a crypto11 key pair.
type c11Key struct {
	s   crypto11.Signer
	ctx *crypto11.Context
}

func (k *c11Key) Public() crypto.PublicKey { return k.s.Public() }

// Sign signs digest in the token. crypto11's RSA keys panic on nil opts:
// those are refused.
func (k *c11Key) Sign(rand io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if opts == nil {
		return nil, errors.New("signing with a PKCS#11 key: no hash given")
	}
	return k.s.Sign(rand, digest, opts)
}

func (k *c11Key) info() (p11KeyInfo, error) {
	attrs, err := k.ctx.GetAttributes(k.s, []crypto11.AttributeType{
		crypto11.CkaId, crypto11.CkaLabel, crypto11.CkaSensitive, crypto11.CkaExtractable, crypto11.CkaSign,
	})
	if err != nil {
		return p11KeyInfo{}, err
	}
	flag := func(t crypto11.AttributeType) bool {
		a := attrs[t]
		return a != nil && len(a.Value) > 0 && a.Value[0] != 0
	}
	value := func(t crypto11.AttributeType) []byte {
		if a := attrs[t]; a != nil {
			return a.Value
		}
		return nil
	}
	return p11KeyInfo{
		ID: value(crypto11.CkaId), Label: value(crypto11.CkaLabel),
		Sensitive: flag(crypto11.CkaSensitive), Extractable: flag(crypto11.CkaExtractable), CanSign: flag(crypto11.CkaSign),
	}, nil
}

func (k *c11Key) destroy() error { return k.s.Delete() }
