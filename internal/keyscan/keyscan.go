// Package keyscan looks through files for private key material, so that
// tests of CA keys kept in PKCS#11 tokens can show that the key never
// reached the disk: not as a PEM block, not as DER at any offset, not as
// the raw private scalar (ECDSA) or a prime factor (RSA) of the CA's
// public key, in the files or in the bytes of their PEM blocks.
//
// DER is looked for everywhere. The raw-bytes search (a scalar
// multiplication per offset) runs over every PEM block's bytes and every
// file that is not UTF-8 text (DER files, the token's object files): bytes
// written raw into a text file would make it binary, save for a key whose
// every byte happens to be text. Blobs seen before (a certificate and its
// copy) are searched once.
package keyscan

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// Finding is private key material in a file.
type Finding struct {
	File string
	What string
}

func (f Finding) String() string { return f.File + ": " + f.What }

// Stats counts what Scan looked at, for the test's log.
type Stats struct {
	Files, Bytes, PEMBlocks, Windows int
}

// Scan walks every root (a file or a directory; symbolic links are not
// followed) and reports every private key it finds, and every window of
// bytes that is the private half of pub. A private key other than pub's is
// reported unless allow(file) says the file may hold one (an issued leaf's
// key, for instance).
func Scan(roots []string, pub crypto.PublicKey, allow func(file string) bool) ([]Finding, Stats, error) {
	var (
		found []Finding
		st    Stats
	)
	seen := map[[32]byte]bool{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			st.Files++
			st.Bytes += len(data)
			type blob struct {
				data []byte
				raw  bool // search for raw key bytes too
			}
			blobs := []blob{{data, !utf8.Valid(data)}}
			for rest := data; ; {
				var b *pem.Block
				if b, rest = pem.Decode(rest); b == nil {
					break
				}
				st.PEMBlocks++
				blobs = append(blobs, blob{b.Bytes, true})
				if strings.Contains(b.Type, "PRIVATE KEY") && !allow(path) {
					found = append(found, Finding{path, fmt.Sprintf("a PEM %q block", b.Type)})
				}
			}
			for _, b := range blobs {
				sum := sha256.Sum256(b.data)
				if seen[sum] {
					continue
				}
				seen[sum] = true
				for _, key := range derKeys(b.data) {
					switch {
					case samePublic(key, pub):
						found = append(found, Finding{path, "the CA's private key, as DER"})
					case !allow(path):
						found = append(found, Finding{path, "a private key, as DER"})
					}
				}
				if !b.raw {
					continue
				}
				n, what := rawKey(b.data, pub)
				st.Windows += n
				if what != "" {
					found = append(found, Finding{path, what})
				}
			}
			return nil
		})
		if err != nil {
			return nil, st, err
		}
	}
	return found, st, nil
}

// derKeys parses a private key (PKCS#8, SEC 1 or PKCS#1) out of every
// SEQUENCE that starts in data.
func derKeys(data []byte) []crypto.Signer {
	var keys []crypto.Signer
	for i := range data {
		if data[i] != 0x30 {
			continue
		}
		var elem cryptobyte.String
		s := cryptobyte.String(data[i:])
		if !s.ReadASN1Element(&elem, cbasn1.SEQUENCE) {
			continue
		}
		if k, err := x509.ParsePKCS8PrivateKey(elem); err == nil {
			if s, ok := k.(crypto.Signer); ok {
				keys = append(keys, s)
			}
		} else if k, err := x509.ParseECPrivateKey(elem); err == nil {
			keys = append(keys, k)
		} else if k, err := x509.ParsePKCS1PrivateKey(elem); err == nil {
			keys = append(keys, k)
		}
	}
	return keys
}

// rawKey looks for the private scalar of an ECDSA pub, or a prime factor
// of an RSA pub, at every offset of data; it returns the windows it tried
// and what it found.
func rawKey(data []byte, pub crypto.PublicKey) (int, string) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		want, err := k.ECDH()
		if err != nil {
			return 0, ""
		}
		curve := want.Curve()
		size := (k.Curve.Params().BitSize + 7) / 8
		n := 0
		for i := 0; i+size <= len(data); i++ {
			n++
			priv, err := curve.NewPrivateKey(data[i : i+size])
			if err == nil && bytes.Equal(priv.PublicKey().Bytes(), want.Bytes()) {
				return n, fmt.Sprintf("the CA's raw ECDSA private scalar at offset %d", i)
			}
		}
		return n, ""
	case *rsa.PublicKey:
		size := (k.N.BitLen()/2 + 7) / 8
		n := 0
		p, r := new(big.Int), new(big.Int)
		for i := 0; i+size <= len(data); i++ {
			n++
			if data[i] == 0 {
				continue
			}
			p.SetBytes(data[i : i+size])
			if p.Cmp(big.NewInt(1)) > 0 && r.Mod(k.N, p).Sign() == 0 {
				return n, fmt.Sprintf("a prime factor of the CA's RSA modulus at offset %d", i)
			}
		}
		return n, ""
	}
	return 0, ""
}

func samePublic(key crypto.Signer, pub crypto.PublicKey) bool {
	eq, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(pub)
}
