package main

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// parseCerts decodes PEM (every CERTIFICATE block) or DER certificates.
func parseCerts(data []byte) ([]*x509.Certificate, error) {
	if block, _ := pem.Decode(data); block == nil {
		cert, err := x509.ParseCertificate(data)
		if err != nil {
			return nil, errors.New("not a PEM or DER certificate")
		}
		return []*x509.Certificate{cert}, nil
	}
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("bad certificate in PEM: %w", err)
		}
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		return nil, errors.New("no certificate in PEM data")
	}
	return certs, nil
}
