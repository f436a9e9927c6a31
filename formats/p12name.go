package formats

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
	"unicode/utf16"
)

// go-pkcs12's Encode sets a localKeyId on the key and the certificate but
// no friendlyName, which is what Java's keytool shows as the alias (else
// "1") and NSS as the nickname. nameBundle adds it to the key bag, which
// go-pkcs12 keeps in a SafeContents of its own that is not encrypted (the
// key itself is shrouded), and computes the MAC again; the encrypted
// certificates are left as they are.

var (
	oidFriendlyName = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 20}
	oidSHA1         = asn1.ObjectIdentifier{1, 3, 14, 3, 2, 26}
	oidSHA256       = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 1}
)

type pfxPDU struct {
	Version  int
	AuthSafe p12ContentInfo
	MacData  p12MacData `asn1:"optional"`
}

type p12ContentInfo struct {
	ContentType asn1.ObjectIdentifier
	Content     asn1.RawValue `asn1:"tag:0,explicit,optional"`
}

type p12MacData struct {
	Mac struct {
		Algorithm pkix.AlgorithmIdentifier
		Digest    []byte
	}
	MacSalt    []byte
	Iterations int `asn1:"optional,default:1"`
}

type p12SafeBag struct {
	ID         asn1.ObjectIdentifier
	Value      asn1.RawValue  `asn1:"tag:0,explicit"`
	Attributes []p12Attribute `asn1:"set,optional"`
}

type p12Attribute struct {
	ID    asn1.ObjectIdentifier
	Value asn1.RawValue `asn1:"set"`
}

// nameBundle returns der, a bundle from go-pkcs12's Encode, with a
// friendlyName attribute holding name on its key bag, and its MAC computed
// again with password.
func nameBundle(der []byte, name, password string) ([]byte, error) {
	var pfx pfxPDU
	if rest, err := asn1.Unmarshal(der, &pfx); err != nil || len(rest) > 0 || !pfx.AuthSafe.ContentType.Equal(oidData) {
		return nil, fmt.Errorf("naming the bundle: unexpected encoding: %v", err)
	}
	var authSafeBytes []byte
	if _, err := asn1.Unmarshal(pfx.AuthSafe.Content.Bytes, &authSafeBytes); err != nil {
		return nil, fmt.Errorf("naming the bundle: %w", err)
	}
	var safes []p12ContentInfo
	if _, err := asn1.Unmarshal(authSafeBytes, &safes); err != nil {
		return nil, fmt.Errorf("naming the bundle: %w", err)
	}
	named := false
	for i, ci := range safes {
		if !ci.ContentType.Equal(oidData) {
			continue // the encrypted certificates
		}
		var contents []byte
		if _, err := asn1.Unmarshal(ci.Content.Bytes, &contents); err != nil {
			return nil, fmt.Errorf("naming the bundle: %w", err)
		}
		var bags []p12SafeBag
		if _, err := asn1.Unmarshal(contents, &bags); err != nil {
			return nil, fmt.Errorf("naming the bundle: %w", err)
		}
		for j := range bags {
			if !bags[j].ID.Equal(oidShroudedKey) {
				continue
			}
			attr, err := friendlyName(name)
			if err != nil {
				return nil, err
			}
			bags[j].Attributes = append(bags[j].Attributes, attr)
			named = true
		}
		if contents, err := asn1.Marshal(bags); err != nil {
			return nil, fmt.Errorf("naming the bundle: %w", err)
		} else if safes[i].Content.Bytes, err = asn1.Marshal(contents); err != nil {
			return nil, fmt.Errorf("naming the bundle: %w", err)
		}
		safes[i].Content.FullBytes = nil
	}
	if !named {
		return nil, errors.New("naming the bundle: no shrouded key bag")
	}
	authSafeBytes, err := asn1.Marshal(safes)
	if err != nil {
		return nil, fmt.Errorf("naming the bundle: %w", err)
	}
	if pfx.AuthSafe.Content.Bytes, err = asn1.Marshal(authSafeBytes); err != nil {
		return nil, fmt.Errorf("naming the bundle: %w", err)
	}
	pfx.AuthSafe.Content.FullBytes = nil
	var h func() hash.Hash
	switch alg := pfx.MacData.Mac.Algorithm.Algorithm; {
	case alg.Equal(oidSHA1):
		h = sha1.New
	case alg.Equal(oidSHA256):
		h = sha256.New
	default:
		return nil, fmt.Errorf("naming the bundle: unexpected MAC algorithm %v", alg)
	}
	key := p12KDF(h, 3, bmpPassword(password), pfx.MacData.MacSalt, pfx.MacData.Iterations, h().Size())
	mac := hmac.New(h, key)
	mac.Write(authSafeBytes)
	pfx.MacData.Mac.Digest = mac.Sum(nil)
	out, err := asn1.Marshal(pfx)
	if err != nil {
		return nil, fmt.Errorf("naming the bundle: %w", err)
	}
	return out, nil
}

// friendlyName is the PKCS#9 friendlyName attribute: a BMPString.
func friendlyName(name string) (p12Attribute, error) {
	var bmp []byte
	for _, r := range utf16.Encode([]rune(name)) {
		bmp = append(bmp, byte(r>>8), byte(r))
	}
	value, err := asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagBMPString, Bytes: bmp})
	if err != nil {
		return p12Attribute{}, fmt.Errorf("naming the bundle: %w", err)
	}
	return p12Attribute{ID: oidFriendlyName, Value: asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSet, IsCompound: true, Bytes: value}}, nil
}

// bmpPassword is an ASCII password as RFC 7292 B.1 feeds it to the KDF:
// big-endian UTF-16 with two zero bytes at the end.
func bmpPassword(password string) []byte {
	out := make([]byte, 0, 2*len(password)+2)
	for _, r := range utf16.Encode([]rune(password)) {
		out = append(out, byte(r>>8), byte(r))
	}
	return append(out, 0, 0)
}

// p12KDF is the key derivation of RFC 7292 appendix B.2 with hash h (whose
// block is 64 bytes, as SHA-1's and SHA-256's are), purpose id (3: MAC key).
func p12KDF(h func() hash.Hash, id byte, password, salt []byte, iterations, size int) []byte {
	const v = 64
	fill := func(b []byte) []byte {
		if len(b) == 0 {
			return nil
		}
		out := make([]byte, v*((len(b)+v-1)/v))
		for i := range out {
			out[i] = b[i%len(b)]
		}
		return out
	}
	d := make([]byte, v)
	for i := range d {
		d[i] = id
	}
	in := append(fill(salt), fill(password)...)
	var out []byte
	for len(out) < size {
		hh := h()
		hh.Write(d)
		hh.Write(in)
		a := hh.Sum(nil)
		for i := 1; i < iterations; i++ {
			hh.Reset()
			hh.Write(a)
			a = hh.Sum(nil)
		}
		out = append(out, a...)
		if len(out) >= size {
			break
		}
		b := fill(a)
		for j := 0; j < len(in); j += v {
			carry := 1
			for k := v - 1; k >= 0; k-- {
				sum := int(in[j+k]) + int(b[k]) + carry
				in[j+k], carry = byte(sum), sum>>8
			}
		}
	}
	return out[:size]
}
