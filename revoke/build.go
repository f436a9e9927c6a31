package revoke

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"iter"
	"math/big"
	"strings"
	"time"
	"unicode"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// Params are the CRL-wide fields of a CRL built by Build.
type Params struct {
	// Issuer is the CA certificate: its subject becomes the CRL issuer and
	// its subject key identifier the authority key identifier. It must have
	// a subject key identifier and the cRLSign key usage.
	Issuer *x509.Certificate
	// Signer holds the private key of Issuer.
	Signer crypto.Signer
	// Number is the cRLNumber: positive, at most 20 octets (RFC 5280 5.2.3).
	Number *big.Int
	// ThisUpdate and NextUpdate bound the CRL's validity; NextUpdate must be
	// after ThisUpdate. Both are written in UTC to the second.
	ThisUpdate, NextUpdate time.Time
	// ExpectedEntries, if known, is about how many entries Build will be
	// given; it sizes the table that finds repeated serials. It is a hint.
	ExpectedEntries int
	// DeltaBase, when set, makes the CRL a delta CRL (RFC 5280 section
	// 5.2.4) against the complete CRL numbered DeltaBase: it carries the
	// critical delta CRL indicator, lists what changed since that CRL, and
	// may list removeFromCRL entries (a hold lifted). It must be positive
	// and below Number.
	DeltaBase *big.Int
	// FreshestCRL, on a complete CRL only, are the URLs where its delta
	// CRLs are published (the freshest CRL extension, section 5.2.6). A
	// relying party such as OpenSSL looks for a delta only when the
	// complete CRL, or the certificate, carries it. Each URL must be
	// non-empty ASCII: it is written as an IA5String.
	FreshestCRL []string
}

var (
	oidFreshestCRL    = []byte{0x55, 0x1d, 0x2e} // 2.5.29.46
	oidAuthorityKeyID = []byte{0x55, 0x1d, 0x23} // 2.5.29.35
	oidCRLNumber      = []byte{0x55, 0x1d, 0x14} // 2.5.29.20
	oidReasonCode     = []byte{0x55, 0x1d, 0x15} // 2.5.29.21
)

// Build returns the DER encoding of an X.509 v2 CRL (RFC 5280 section 5)
// listing entries in the order given, signed by p.Signer. The CRL carries the
// authority key identifier and CRL number extensions; each entry carries a
// reason code extension unless its reason is Unspecified.
//
// Build checks its input and writes nothing on error: every serial must be
// positive, at most 20 octets and listed once, every revocation time must be
// set and not after p.ThisUpdate, and removeFromCRL is refused unless the CRL
// is a delta CRL (p.DeltaBase). Entries are encoded as they arrive into chunks that are
// copied once into the result, so memory stays near twice the size of the
// CRL, never a parsed copy of each entry. Build keeps nothing of an entry
// once it asks for the next, so the iterator may reuse its serial's big.Int.
func Build(p Params, entries iter.Seq[Entry]) ([]byte, error) {
	alg, err := p.check()
	if err != nil {
		return nil, fmt.Errorf("building CRL: %w", err)
	}
	prefix, suffix, err := p.encodeFixed(alg)
	if err != nil {
		return nil, fmt.Errorf("building CRL: %w", err)
	}

	var buf entryBuffer
	seen := newSerialSet(p.ExpectedEntries)
	var serialBuf [maxSerialOctets]byte
	i := 0
	for e := range entries {
		if err := buf.appendEntry(e, p.ThisUpdate, p.DeltaBase != nil, serialBuf[:], &seen, i); err != nil {
			return nil, fmt.Errorf("building CRL: %w", err)
		}
		i++
	}
	seen = serialSet{}

	// The TBS length is now known; only the outer header waits for the
	// signature, so it gets a slot in front that is filled from the right.
	tbsBody := len(prefix) + len(suffix) + buf.size
	if buf.size > 0 { // RFC 5280 5.1.2.6: omit an empty list entirely
		tbsBody += headerLen(buf.size)
	}
	out := make([]byte, maxHeader, maxHeader+headerLen(tbsBody)+tbsBody+len(alg.der)+maxHeader+alg.maxSigLen(p.Signer.Public()))
	out = appendHeader(out, tagSequence, tbsBody)
	out = append(out, prefix...)
	if buf.size > 0 {
		out = appendHeader(out, tagSequence, buf.size)
	}
	for _, c := range buf.chunks {
		out = append(out, c...)
	}
	buf = entryBuffer{}
	out = append(out, suffix...)

	sig, err := alg.sign(p.Signer, out[maxHeader:])
	if err != nil {
		return nil, fmt.Errorf("building CRL: signing: %w", err)
	}
	out = append(out, alg.der...)
	out = appendHeader(out, 0x03, len(sig)+1)
	out = append(out, 0) // no unused bits
	out = append(out, sig...)
	start := putHeader(out, maxHeader, tagSequence, len(out)-maxHeader)
	return out[start:], nil
}

// check validates the CRL-wide parameters and picks the signature algorithm.
func (p Params) check() (sigAlg, error) {
	switch {
	case p.Issuer == nil:
		return sigAlg{}, errors.New("no issuer certificate")
	case p.Signer == nil:
		return sigAlg{}, errors.New("no signer")
	case len(p.Issuer.SubjectKeyId) == 0:
		return sigAlg{}, errors.New("issuer certificate has no subject key identifier")
	case p.Issuer.KeyUsage&x509.KeyUsageCRLSign == 0:
		return sigAlg{}, errors.New("issuer certificate lacks the cRLSign key usage")
	case p.Number == nil || p.Number.Sign() <= 0:
		return sigAlg{}, fmt.Errorf("CRL number %v is not positive", p.Number)
	case p.Number.BitLen() > 8*maxSerialOctets-1:
		return sigAlg{}, fmt.Errorf("CRL number %x is longer than 20 octets", p.Number)
	case p.DeltaBase != nil && (p.DeltaBase.Sign() <= 0 || p.DeltaBase.Cmp(p.Number) >= 0):
		return sigAlg{}, fmt.Errorf("delta CRL base %v is not positive and below the CRL number %v", p.DeltaBase, p.Number)
	case p.DeltaBase != nil && len(p.FreshestCRL) > 0:
		return sigAlg{}, errors.New("a delta CRL carries no freshest CRL extension (RFC 5280 section 5.2.6)")
	case !p.NextUpdate.Truncate(time.Second).After(p.ThisUpdate.Truncate(time.Second)):
		return sigAlg{}, fmt.Errorf("next update %s is not after this update %s",
			p.NextUpdate.UTC().Format(time.RFC3339), p.ThisUpdate.UTC().Format(time.RFC3339))
	}
	if err := checkIA5URLs(p.FreshestCRL); err != nil {
		return sigAlg{}, err
	}
	pub, ok := p.Signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(p.Issuer.PublicKey) {
		return sigAlg{}, errors.New("signer public key does not match the issuer certificate")
	}
	return signingAlg(p.Signer.Public())
}

// encodeFixed encodes the TBS fields before the entries (version, signature
// algorithm, issuer, thisUpdate, nextUpdate) and the crlExtensions after.
func (p Params) encodeFixed(alg sigAlg) (prefix, suffix []byte, err error) {
	prefix = append([]byte{tagInteger, 1, 1}, alg.der...) // version v2
	prefix = append(prefix, p.Issuer.RawSubject...)
	if prefix, err = appendTime(prefix, p.ThisUpdate); err != nil {
		return nil, nil, fmt.Errorf("this update: %w", err)
	}
	if prefix, err = appendTime(prefix, p.NextUpdate); err != nil {
		return nil, nil, fmt.Errorf("next update: %w", err)
	}

	var b cryptobyte.Builder
	b.AddASN1(cbasn1.Tag(0).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			addExtension(b, oidAuthorityKeyID, func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
					// keyIdentifier [0] IMPLICIT KeyIdentifier (RFC 5280 4.2.1.1)
					b.AddASN1(cbasn1.Tag(0).ContextSpecific(), func(b *cryptobyte.Builder) {
						b.AddBytes(p.Issuer.SubjectKeyId)
					})
				})
			})
			addExtension(b, oidCRLNumber, func(b *cryptobyte.Builder) {
				b.AddASN1BigInt(p.Number)
			})
			if p.DeltaBase != nil { // critical: RFC 5280 section 5.2.4
				addCriticalExtension(b, oidDeltaCRLIndicator, func(b *cryptobyte.Builder) {
					b.AddASN1BigInt(p.DeltaBase)
				})
			}
			if len(p.FreshestCRL) > 0 {
				addExtension(b, oidFreshestCRL, func(b *cryptobyte.Builder) { addDistributionPoints(b, p.FreshestCRL) })
			}
		})
	})
	suffix, err = b.Bytes()
	if err != nil {
		return nil, nil, fmt.Errorf("encoding extensions: %w", err)
	}
	return prefix, suffix, nil
}

// addExtension adds a non-critical Extension whose extnValue is built by body.
func addExtension(b *cryptobyte.Builder, oid []byte, body cryptobyte.BuilderContinuation) {
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.OBJECT_IDENTIFIER, func(b *cryptobyte.Builder) { b.AddBytes(oid) })
		b.AddASN1(cbasn1.OCTET_STRING, body)
	})
}

// addCriticalExtension adds an Extension marked critical.
func addCriticalExtension(b *cryptobyte.Builder, oid []byte, body cryptobyte.BuilderContinuation) {
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.OBJECT_IDENTIFIER, func(b *cryptobyte.Builder) { b.AddBytes(oid) })
		b.AddASN1Boolean(true)
		b.AddASN1(cbasn1.OCTET_STRING, body)
	})
}

// checkIA5URLs checks that every freshest CRL URL can be written as the
// IA5String of a uniformResourceIdentifier (RFC 5280 section 4.2.1.6):
// non-empty and ASCII.
func checkIA5URLs(urls []string) error {
	for i, u := range urls {
		if u == "" || strings.IndexFunc(u, func(r rune) bool { return r > unicode.MaxASCII }) >= 0 {
			return fmt.Errorf("freshest CRL URL %d %q is not a non-empty ASCII string (IA5String)", i+1, u)
		}
	}
	return nil
}

// addDistributionPoints adds CRLDistributionPoints (RFC 5280 section
// 4.2.1.13) of one distribution point naming each URL: the syntax of the
// freshest CRL extension.
func addDistributionPoints(b *cryptobyte.Builder, urls []string) {
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { // CRLDistributionPoints
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { // DistributionPoint
			b.AddASN1(cbasn1.Tag(0).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) { // distributionPoint
				b.AddASN1(cbasn1.Tag(0).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) { // fullName
					for _, u := range urls {
						b.AddASN1(cbasn1.Tag(6).ContextSpecific(), func(b *cryptobyte.Builder) { b.AddBytes([]byte(u)) })
					}
				})
			})
		})
	})
}
