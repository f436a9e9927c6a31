package ca

import (
	"crypto"
	//lint:ignore SA1019 DSA is named only to refuse its keys with a clear message
	"crypto/dsa"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"fmt"
	"strings"

	"go.step.sm/crypto/keyutil"
)

// KeyType names a key algorithm and size that minica generates.
type KeyType string

// The key types minica generates. ECDSAP256 is the default.
const (
	ECDSAP256 KeyType = "ecdsa-p256"
	ECDSAP384 KeyType = "ecdsa-p384"
	RSA2048   KeyType = "rsa-2048"
	RSA3072   KeyType = "rsa-3072"
	RSA4096   KeyType = "rsa-4096"
	Ed25519   KeyType = "ed25519"
)

// KeyTypes lists every KeyType in the order help texts show them.
var KeyTypes = []KeyType{ECDSAP256, ECDSAP384, RSA2048, RSA3072, RSA4096, Ed25519}

// ParseKeyType parses a key type name, case-insensitively.
func ParseKeyType(s string) (KeyType, error) {
	for _, kt := range KeyTypes {
		if strings.EqualFold(s, string(kt)) {
			return kt, nil
		}
	}
	names := make([]string, len(KeyTypes))
	for i, kt := range KeyTypes {
		names[i] = string(kt)
	}
	return "", fmt.Errorf("unknown key type %s: want one of %s", printable(s), strings.Join(names, ", "))
}

// Generate returns a new private key of type kt.
func (kt KeyType) Generate() (crypto.Signer, error) {
	var (
		key crypto.Signer
		err error
	)
	switch kt {
	case ECDSAP256:
		key, err = keyutil.GenerateSigner("EC", "P-256", 0)
	case ECDSAP384:
		key, err = keyutil.GenerateSigner("EC", "P-384", 0)
	case RSA2048:
		key, err = keyutil.GenerateSigner("RSA", "", 2048)
	case RSA3072:
		key, err = keyutil.GenerateSigner("RSA", "", 3072)
	case RSA4096:
		key, err = keyutil.GenerateSigner("RSA", "", 4096)
	case Ed25519:
		key, err = keyutil.GenerateSigner("OKP", "Ed25519", 0)
	default:
		return nil, fmt.Errorf("unknown key type %q", string(kt))
	}
	if err != nil {
		return nil, fmt.Errorf("generating %s key: %w", kt, err)
	}
	return key, nil
}

// CheckPublicKey refuses keys too weak to certify: RSA under 2048 bits,
// elliptic curves other than P-256 and P-384, and any other algorithm but
// Ed25519.
func CheckPublicKey(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("weak key: RSA %d bits, at least 2048 required", k.N.BitLen())
		}
	case *ecdsa.PublicKey:
		if name := k.Curve.Params().Name; name != "P-256" && name != "P-384" {
			return fmt.Errorf("weak key: ECDSA curve %s, want P-256 or P-384", name)
		}
	case ed25519.PublicKey:
	case *dsa.PublicKey:
		return errors.New("unsupported key algorithm DSA: want RSA (2048 bits or more), ECDSA P-256/P-384 or Ed25519")
	default:
		return fmt.Errorf("unsupported key algorithm %T: want RSA (2048 bits or more), ECDSA P-256/P-384 or Ed25519", pub)
	}
	return nil
}
