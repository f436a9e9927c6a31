package formats

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// EncodeCertificates writes certs as concatenated PEM blocks, or as DER,
// which holds exactly one certificate.
func EncodeCertificates(certs []*x509.Certificate, enc Encoding) ([]byte, error) {
	if len(certs) == 0 {
		return nil, errors.New("encoding certificates: no certificate given")
	}
	if enc == DER {
		if len(certs) > 1 {
			return nil, fmt.Errorf("encoding certificates: DER holds one certificate, not a chain of %d (use PEM)", len(certs))
		}
		return certs[0].Raw, nil
	}
	var buf bytes.Buffer
	for _, c := range certs {
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}); err != nil {
			return nil, fmt.Errorf("encoding certificates: %w", err)
		}
	}
	return buf.Bytes(), nil
}

// EncodeCSR writes a certificate request as PEM ("CERTIFICATE REQUEST") or
// DER.
func EncodeCSR(csr *x509.CertificateRequest, enc Encoding) []byte {
	return encodeRaw("CERTIFICATE REQUEST", csr.Raw, enc)
}

// EncodeCRL writes a CRL as PEM ("X509 CRL") or DER.
func EncodeCRL(crl *x509.RevocationList, enc Encoding) []byte {
	return encodeRaw("X509 CRL", crl.Raw, enc)
}

// EncodePublicKey writes pub as a SubjectPublicKeyInfo, PEM ("PUBLIC KEY")
// or DER.
func EncodePublicKey(pub crypto.PublicKey, enc Encoding) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encoding public key: %w", err)
	}
	return encodeRaw("PUBLIC KEY", der, enc), nil
}

func encodeRaw(typ string, der []byte, enc Encoding) []byte {
	if enc == DER {
		return der
	}
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// Reencode writes obj in the other encoding (or the same one) without
// changing anything else: a key keeps its format and its encryption, a
// certificate its exact bytes. A chain or a bundle has no DER form, nor has
// a legacy encrypted PEM key; a PKCS#12 bundle converts through DecodeP12.
func Reencode(obj *Object, enc Encoding) ([]byte, error) {
	switch obj.Kind {
	case KindCertificate:
		return EncodeCertificates(obj.Certificates, enc)
	case KindCSR:
		return EncodeCSR(obj.CSR, enc), nil
	case KindCRL:
		return EncodeCRL(obj.CRL, enc), nil
	case KindPublicKey:
		if obj.PublicKey.Format == PKCS1 {
			return encodeRaw("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(obj.PublicKey.Key.(*rsa.PublicKey)), enc), nil
		}
		return EncodePublicKey(obj.PublicKey.Key, enc)
	case KindPrivateKey:
		return reencodeKey(obj.Key, enc)
	case KindBundle:
		if enc == DER {
			return nil, errors.New("converting a bundle: DER holds one object, not a key and certificates (use PEM)")
		}
		key, err := reencodeKey(obj.Key, PEM)
		if err != nil {
			return nil, err
		}
		certs, err := EncodeCertificates(obj.Certificates, PEM)
		if err != nil {
			return nil, err
		}
		return append(key, certs...), nil
	case KindPKCS12:
		return nil, errors.New("converting a PKCS#12 bundle: decode it with its password first")
	}
	return nil, fmt.Errorf("converting %s: unsupported", obj.Kind)
}

func reencodeKey(k *KeyData, enc Encoding) ([]byte, error) {
	switch k.Format {
	case LegacyEncrypted:
		if enc == DER {
			return nil, errors.New("converting a legacy encrypted PEM key: it has no DER form (decrypt it first)")
		}
		return pem.EncodeToMemory(k.block), nil
	}
	for typ, f := range pemKeyFormat {
		if f == k.Format {
			return encodeRaw(typ, k.der, enc), nil
		}
	}
	return nil, fmt.Errorf("converting a %s key: unsupported", k.Format)
}
