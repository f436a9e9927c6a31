package revoke

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
)

// sigAlg is a signature algorithm: its DER AlgorithmIdentifier, the digest
// the signer is given (0 for Ed25519, which signs the message itself), and
// the crypto/x509 name used to verify it.
type sigAlg struct {
	der  []byte
	hash crypto.Hash
	x509 x509.SignatureAlgorithm
}

// The AlgorithmIdentifiers of RFC 5758 section 3.2, RFC 4055 section 5 and
// RFC 8410 section 3, as crypto/x509 writes them: no parameters for ECDSA
// and Ed25519, NULL for RSA.
var (
	algECDSASHA256 = sigAlg{der: []byte{0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02}, hash: crypto.SHA256, x509: x509.ECDSAWithSHA256}
	algECDSASHA384 = sigAlg{der: []byte{0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03}, hash: crypto.SHA384, x509: x509.ECDSAWithSHA384}
	algECDSASHA512 = sigAlg{der: []byte{0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x04}, hash: crypto.SHA512, x509: x509.ECDSAWithSHA512}
	algRSASHA256   = sigAlg{der: []byte{0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b, 0x05, 0x00}, hash: crypto.SHA256, x509: x509.SHA256WithRSA}
	algRSASHA384   = sigAlg{der: []byte{0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0c, 0x05, 0x00}, hash: crypto.SHA384, x509: x509.SHA384WithRSA}
	algRSASHA512   = sigAlg{der: []byte{0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0d, 0x05, 0x00}, hash: crypto.SHA512, x509: x509.SHA512WithRSA}
	algEd25519     = sigAlg{der: []byte{0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70}, x509: x509.PureEd25519}
)

// verifiable lists the algorithms ParseCRL accepts.
var verifiable = []sigAlg{algECDSASHA256, algECDSASHA384, algECDSASHA512, algRSASHA256, algRSASHA384, algRSASHA512, algEd25519}

// signingAlg picks the algorithm crypto/x509 would pick for pub.
func signingAlg(pub crypto.PublicKey) (sigAlg, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return algECDSASHA256, nil
		case elliptic.P384():
			return algECDSASHA384, nil
		case elliptic.P521():
			return algECDSASHA512, nil
		}
		return sigAlg{}, fmt.Errorf("unsupported ECDSA curve %s", k.Curve.Params().Name)
	case *rsa.PublicKey:
		return algRSASHA256, nil
	case ed25519.PublicKey:
		return algEd25519, nil
	}
	return sigAlg{}, fmt.Errorf("unsupported signer key type %T", pub)
}

// sign signs tbs with signer under alg.
func (alg sigAlg) sign(signer crypto.Signer, tbs []byte) ([]byte, error) {
	msg := tbs
	if alg.hash != 0 {
		h := alg.hash.New()
		h.Write(tbs)
		msg = h.Sum(nil)
	}
	return signer.Sign(rand.Reader, msg, alg.hash)
}

// maxSigLen returns an upper bound of the signature size for pub, used to
// size the output buffer. A wrong guess costs a copy, not correctness.
func (alg sigAlg) maxSigLen(pub crypto.PublicKey) int {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		return 2*(k.Curve.Params().BitSize+7)/8 + 9 // SEQUENCE of two INTEGERs
	case *rsa.PublicKey:
		return k.Size()
	}
	return ed25519.SignatureSize
}

// lookupAlg returns the verifiable algorithm whose AlgorithmIdentifier is der.
// RSA identifiers are also accepted without their NULL parameters.
func lookupAlg(der []byte) (sigAlg, bool) {
	for _, alg := range verifiable {
		if bytes.Equal(alg.der, der) {
			return alg, true
		}
		if alg.hash != 0 && alg.der[len(alg.der)-2] == 0x05 && len(der) == len(alg.der)-2 &&
			der[1] == alg.der[1]-2 && bytes.Equal(der[2:], alg.der[2:len(alg.der)-2]) {
			return alg, true
		}
	}
	return sigAlg{}, false
}

// Sign signs tbs with signer under the algorithm crypto/x509 would pick for
// its key (ECDSA with the hash of its curve's size, RSA PKCS #1 v1.5 with
// SHA-256, Ed25519) and returns the DER AlgorithmIdentifier with the
// signature. CRLs and serve's OCSP responses are signed through it, so the
// two always name and use the same algorithm.
func Sign(signer crypto.Signer, tbs []byte) (algorithm, signature []byte, err error) {
	alg, err := signingAlg(signer.Public())
	if err != nil {
		return nil, nil, err
	}
	sig, err := alg.sign(signer, tbs)
	if err != nil {
		return nil, nil, err
	}
	return alg.der, sig, nil
}
