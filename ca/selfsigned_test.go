package ca

import (
	"crypto/rsa"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"

	"minica/formats"
	"minica/internal/certlint"
)

func TestSelfSigned(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		req     Request
		wantDNS []string
		wantKU  x509.KeyUsage
		days    int
	}{
		{"default", Request{Name: "www.example.com"}, []string{"www.example.com"}, x509.KeyUsageDigitalSignature, 825},
		{"rsa with IP and validity", Request{Name: "api", IPs: []net.IP{net.IPv4(10, 0, 0, 1)}, KeyType: RSA2048, Validity: 90 * 24 * time.Hour},
			nil, x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, 90},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert, key, err := SelfSigned(tt.req, now)
			if err != nil {
				t.Fatal(err)
			}
			if err := cert.CheckSignature(cert.SignatureAlgorithm, cert.RawTBSCertificate, cert.Signature); err != nil {
				t.Errorf("not self-signed: %v", err)
			}
			if err := formats.KeyMatchesCertificate(key, cert); err != nil {
				t.Error(err)
			}
			certlint.Certificate(t, cert.Raw)
			if cert.IsCA || !cert.BasicConstraintsValid || cert.KeyUsage != tt.wantKU ||
				len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
				t.Errorf("profile: CA %v, KU %v, EKU %v; want a server leaf", cert.IsCA, cert.KeyUsage, cert.ExtKeyUsage)
			}
			if strings.Join(cert.DNSNames, ",") != strings.Join(tt.wantDNS, ",") {
				t.Errorf("DNS names %v; want %v", cert.DNSNames, tt.wantDNS)
			}
			if !cert.NotBefore.Equal(now.Add(-Backdate)) || !cert.NotAfter.Equal(now.Add(-Backdate+time.Duration(tt.days)*24*time.Hour)) {
				t.Errorf("validity %v to %v", cert.NotBefore, cert.NotAfter)
			}
			if _, isRSA := key.(*rsa.PrivateKey); isRSA != (tt.req.KeyType == RSA2048) {
				t.Errorf("key type %T", key)
			}
		})
	}
}

func TestSelfSignedRejects(t *testing.T) {
	tests := []struct {
		name    string
		req     Request
		wantErr string
	}{
		{"no SAN and not a host name", Request{Name: "my_app"},
			`a server certificate needs at least one DNS name or IP address, and name "my_app" is not a host name`},
		{"bad DNS name", Request{Name: "x", DNSNames: []string{"bad..name"}}, "bad..name"},
		{"bad name", Request{Name: "../etc"}, "../etc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := SelfSigned(tt.req, time.Now())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("SelfSigned() error = %v; want containing %q", err, tt.wantErr)
			}
		})
	}
}
