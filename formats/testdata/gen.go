//go:build ignore

// gen writes the fixed inputs of the formats tests. The golden files
// depend on these bytes: after running it, run go test -update.
//
//	go run gen.go
package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"log"
	"math/big"
	"net"
	"net/url"
	"os"
	"time"

	"go.step.sm/crypto/pemutil"
	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

const password = "correct horse battery staple"

func main() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	caKey := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(0x01),
		Subject:               pkix.Name{CommonName: "Formats Test Root", Organization: []string{"minica tests"}},
		NotBefore:             start,
		NotAfter:              start.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	ca := create(caTmpl, caTmpl, caKey.Public(), caKey)

	serverKey := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	server := create(&x509.Certificate{
		SerialNumber: serial("5f3c0a1b2c3d4e5f60718293a4b5c6d7"),
		Subject:      pkix.Name{CommonName: "www.example.com"},
		DNSNames:     []string{"www.example.com", "example.com"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.ParseIP("2001:db8::1")},
		NotBefore:    start,
		NotAfter:     start.AddDate(2, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, serverKey.Public(), caKey)

	rsaKey := must(rsa.GenerateKey(rand.Reader, 2048))
	spiffe := must(url.Parse("spiffe://example.com/simon"))
	client := create(&x509.Certificate{
		SerialNumber: big.NewInt(0x00c0ffee),
		Subject: pkix.Name{
			CommonName:   "simon",
			Organization: []string{"Example, Inc."},
			ExtraNames:   []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}, Value: "simon@example.com"}},
		},
		EmailAddresses: []string{"simon@example.com"},
		URIs:           []*url.URL{spiffe},
		NotBefore:      start,
		NotAfter:       start.AddDate(1, 0, 0),
		KeyUsage:       x509.KeyUsageDigitalSignature,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, rsaKey.Public(), caKey)

	edPub, edKey := must2(ed25519.GenerateKey(rand.Reader))
	edTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(42),
		Subject:      pkix.Name{CommonName: "ed25519.example"},
		DNSNames:     []string{"ed25519.example"},
		NotBefore:    start,
		NotAfter:     start.AddDate(0, 6, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	ed := create(edTmpl, edTmpl, edPub, edKey)

	csrDER := must(x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "www.example.com"},
		DNSNames:    []string{"www.example.com"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}, serverKey))

	crlDER := must(x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number:     big.NewInt(7),
		ThisUpdate: start.AddDate(1, 4, 0),
		NextUpdate: start.AddDate(1, 5, 7),
		RevokedCertificateEntries: []x509.RevocationListEntry{
			{SerialNumber: client.SerialNumber, RevocationTime: start.AddDate(1, 3, 0), ReasonCode: 1},
			{SerialNumber: big.NewInt(0x1234), RevocationTime: start.AddDate(1, 3, 2)},
		},
	}, ca, caKey))

	write("ca.pem", pemOf("CERTIFICATE", ca.Raw))
	write("ca-key.pem", pemOf("PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(caKey))))
	write("server.pem", pemOf("CERTIFICATE", server.Raw))
	write("server.der", server.Raw)
	write("chain.pem", append(pemOf("CERTIFICATE", server.Raw), pemOf("CERTIFICATE", ca.Raw)...))
	serverPKCS8 := must(x509.MarshalPKCS8PrivateKey(serverKey))
	write("server-key.pem", pemOf("PRIVATE KEY", serverPKCS8))
	write("server-key.der", serverPKCS8)
	write("server-key-sec1.pem", pemOf("EC PRIVATE KEY", must(x509.MarshalECPrivateKey(serverKey))))
	write("server-key-sec1.der", must(x509.MarshalECPrivateKey(serverKey)))
	enc := must(pemutil.Serialize(serverKey, pemutil.WithPKCS8(true), pemutil.WithPassword([]byte(password))))
	write("server-key-enc.pem", pem.EncodeToMemory(enc))
	write("server-key-enc.der", enc.Bytes)
	write("bundle.pem", append(append(pemOf("PRIVATE KEY", serverPKCS8), pemOf("CERTIFICATE", server.Raw)...), pemOf("CERTIFICATE", ca.Raw)...))
	serverPub := must(x509.MarshalPKIXPublicKey(serverKey.Public()))
	write("server-pub.pem", pemOf("PUBLIC KEY", serverPub))
	write("server-pub.der", serverPub)
	write("server-csr.pem", pemOf("CERTIFICATE REQUEST", csrDER))
	write("server-csr.der", csrDER)

	write("client-rsa.pem", pemOf("CERTIFICATE", client.Raw))
	write("client-rsa-key-pkcs1.pem", pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)))
	write("client-rsa-key-pkcs1.der", x509.MarshalPKCS1PrivateKey(rsaKey))
	legacy := must(x509.EncryptPEMBlock(rand.Reader, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey), []byte(password), x509.PEMCipherAES256))
	write("client-rsa-key-legacy.pem", pem.EncodeToMemory(legacy))
	write("rsa-pub-pkcs1.pem", pemOf("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&rsaKey.PublicKey)))

	write("ed25519.pem", pemOf("CERTIFICATE", ed.Raw))
	write("ed25519-key.pem", pemOf("PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(edKey))))

	write("crl.pem", pemOf("X509 CRL", crlDER))
	write("crl.der", crlDER)

	write("modern.p12", must(pkcs12.Modern2023.Encode(serverKey, server, []*x509.Certificate{ca}, password)))
	write("compat.p12", must(pkcs12.LegacyDES.Encode(rsaKey, client, []*x509.Certificate{ca}, password)))
}

func create(tmpl, parent *x509.Certificate, pub crypto.PublicKey, key crypto.Signer) *x509.Certificate {
	der := must(x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key))
	return must(x509.ParseCertificate(der))
}

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func write(name string, data []byte) {
	if err := os.WriteFile(name, data, 0o644); err != nil {
		log.Fatal(err)
	}
}

func serial(h string) *big.Int {
	n, ok := new(big.Int).SetString(h, 16)
	if !ok {
		log.Fatalf("bad serial %q", h)
	}
	return n
}

func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return v
}

func must2[T, U any](a T, b U, err error) (T, U) {
	if err != nil {
		log.Fatal(err)
	}
	return a, b
}
