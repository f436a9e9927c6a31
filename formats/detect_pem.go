package formats

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
)

var pemBegin = []byte("-----BEGIN ")

// detectPEM decodes every PEM block of data and combines them into one
// Object. Text around the blocks (openssl's "Bag Attributes", -text output)
// is ignored, as openssl does.
func detectPEM(data []byte) (*Object, error) {
	obj := &Object{Encoding: PEM}
	rest := data
	for {
		block, next := pem.Decode(rest)
		if block == nil {
			if bytes.Contains(rest, pemBegin) {
				return nil, badPEM(rest)
			}
			break
		}
		rest = next
		if err := addPEMBlock(obj, block); err != nil {
			return nil, err
		}
	}
	if err := obj.settleKind(); err != nil {
		return nil, err
	}
	return obj, nil
}

// badPEM explains why pem.Decode found no block although a BEGIN line is
// there: the END line is missing (a truncated file) or the body is not
// base64.
func badPEM(data []byte) error {
	i := bytes.Index(data, pemBegin)
	line := data[i:]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	begin := strings.TrimSpace(string(line))
	typ := strings.TrimSuffix(strings.TrimPrefix(begin, "-----BEGIN "), "-----")
	if !bytes.Contains(data[i:], []byte("-----END "+typ+"-----")) {
		return fmt.Errorf("%w: PEM block %q has no END line", ErrTruncated, typ)
	}
	return fmt.Errorf("%w: PEM block %q is not valid base64", ErrMalformed, typ)
}

func addPEMBlock(obj *Object, block *pem.Block) error {
	switch block.Type {
	case "CERTIFICATE", "X509 CERTIFICATE":
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return derError("certificate", block.Bytes, err)
		}
		obj.Certificates = append(obj.Certificates, cert)
	case "CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST":
		if obj.CSR != nil {
			return fmt.Errorf("%w: PEM holds more than one certificate request", ErrUnknownFormat)
		}
		csr, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return derError("certificate request", block.Bytes, err)
		}
		obj.CSR = csr
	case "X509 CRL":
		if obj.CRL != nil {
			return fmt.Errorf("%w: PEM holds more than one CRL", ErrUnknownFormat)
		}
		crl, err := x509.ParseRevocationList(block.Bytes)
		if err != nil {
			return derError("CRL", block.Bytes, err)
		}
		obj.CRL = crl
	case "PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY":
		if obj.Key != nil {
			return fmt.Errorf("%w: PEM holds more than one private key", ErrUnknownFormat)
		}
		key, err := keyFromPEM(block)
		if err != nil {
			return err
		}
		obj.Key = key
	case "PUBLIC KEY", "RSA PUBLIC KEY":
		if obj.PublicKey != nil {
			return fmt.Errorf("%w: PEM holds more than one public key", ErrUnknownFormat)
		}
		pub, err := publicKeyFromDER(block.Bytes, block.Type == "RSA PUBLIC KEY")
		if err != nil {
			return err
		}
		obj.PublicKey = pub
	case "EC PARAMETERS":
		// openssl ecparam -genkey writes the curve before the key; the key
		// names its curve itself.
	default:
		return fmt.Errorf("%w: unsupported PEM block %q", ErrUnknownFormat, block.Type)
	}
	return nil
}

// settleKind sets obj.Kind from what its blocks held, refusing mixes that
// no tool writes (a CSR with a CRL, two keys...).
func (obj *Object) settleKind() error {
	var parts []string
	if n := len(obj.Certificates); n > 0 {
		parts = append(parts, plural(n, "certificate", "certificates"))
	}
	if obj.CSR != nil {
		parts = append(parts, "a certificate request")
	}
	if obj.CRL != nil {
		parts = append(parts, "a CRL")
	}
	if obj.Key != nil {
		parts = append(parts, "a private key")
	}
	if obj.PublicKey != nil {
		parts = append(parts, "a public key")
	}
	switch {
	case len(parts) == 0:
		return fmt.Errorf("%w: PEM holds no certificate, request, CRL or key", ErrUnknownFormat)
	case len(parts) == 1 && len(obj.Certificates) > 0:
		obj.Kind = KindCertificate
	case len(parts) == 1 && obj.CSR != nil:
		obj.Kind = KindCSR
	case len(parts) == 1 && obj.CRL != nil:
		obj.Kind = KindCRL
	case len(parts) == 1 && obj.Key != nil:
		obj.Kind = KindPrivateKey
	case len(parts) == 1 && obj.PublicKey != nil:
		obj.Kind = KindPublicKey
	case len(parts) == 2 && obj.Key != nil && len(obj.Certificates) > 0:
		obj.Kind = KindBundle
	default:
		return fmt.Errorf("%w: PEM mixes %s", ErrUnknownFormat, strings.Join(parts, " and "))
	}
	return nil
}
