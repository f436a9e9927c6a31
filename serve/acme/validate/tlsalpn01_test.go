package validate

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"minica/serve/acme/internal/dnstest"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

// certSpec describes a tls-alpn-01 certificate for the tests; the zero
// value, with names, is a valid one for keyAuth.
type certSpec struct {
	dns         []string
	ips         []string
	keyAuth     string // "" is keyAuth
	notCritical bool
	noExtension bool
	chain       bool // present an extra certificate after it
}

func (s certSpec) make(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "acme-tls/1 test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     s.dns,
	}
	for _, ip := range s.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	if !s.noExtension {
		ka := s.keyAuth
		if ka == "" {
			ka = keyAuth
		}
		sum := sha256.Sum256([]byte(ka))
		value, err := asn1.Marshal(sum[:])
		if err != nil {
			t.Fatal(err)
		}
		tmpl.ExtraExtensions = []pkix.Extension{{Id: oidACMEIdentifier, Critical: !s.notCritical, Value: value}}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	if s.chain {
		cert.Certificate = append(cert.Certificate, der)
	}
	return cert
}

// startTLS serves handshakes with cert on 127.0.0.1, offering protos, and
// returns its port and the channel of the SNI each client sent.
func startTLS(t *testing.T, cert tls.Certificate, protos []string) (int, <-chan string) {
	t.Helper()
	snis := make(chan string, 4)
	cfg := &tls.Config{
		NextProtos: protos,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			snis <- hello.ServerName
			return &cert, nil
		},
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	return port(t, l), snis
}

func TestTLSALPN01(t *testing.T) {
	dns := dnstest.Start(t, dnstest.Zone{A: map[string]netip.Addr{"acme.test": netip.MustParseAddr("127.0.0.1")}})
	name := Identifier{"dns", "acme.test"}
	acme := []string{acmeTLS1}
	tests := []struct {
		name    string
		id      Identifier
		cert    certSpec
		protos  []string
		wantSNI string
		wantErr string // "type: detail", "" when valid
	}{
		{name: "valid name", id: name, cert: certSpec{dns: []string{"acme.test"}}, protos: acme, wantSNI: "acme.test"},
		{name: "valid name in other case", id: name, cert: certSpec{dns: []string{"ACME.test"}}, protos: acme, wantSNI: "acme.test"},
		{name: "valid address", id: localhost, cert: certSpec{ips: []string{"127.0.0.1"}}, protos: acme,
			wantSNI: "1.0.0.127.in-addr.arpa"},
		{name: "wrong digest", id: name, cert: certSpec{dns: []string{"acme.test"}, keyAuth: "other"}, protos: acme,
			wantErr: "incorrectResponse: acme.test:PORT presented a certificate whose acmeIdentifier is "},
		{name: "not critical", id: name, cert: certSpec{dns: []string{"acme.test"}, notCritical: true}, protos: acme,
			wantErr: "incorrectResponse: acme.test:PORT presented a certificate whose acmeIdentifier extension is not critical; want critical"},
		{name: "no extension", id: name, cert: certSpec{dns: []string{"acme.test"}, noExtension: true}, protos: acme,
			wantErr: "incorrectResponse: acme.test:PORT presented a certificate without the acmeIdentifier extension (1.3.6.1.5.5.7.1.31)"},
		{name: "two names", id: name, cert: certSpec{dns: []string{"acme.test", "other.test"}}, protos: acme,
			wantErr: "incorrectResponse: acme.test:PORT presented a certificate for acme.test, other.test (2 subjectAltName entries); want exactly one, dNSName acme.test"},
		{name: "another name", id: name, cert: certSpec{dns: []string{"other.test"}}, protos: acme,
			wantErr: "want exactly one, dNSName acme.test"},
		{name: "name for an address", id: localhost, cert: certSpec{dns: []string{"127.0.0.1"}}, protos: acme,
			wantErr: "want exactly one, iPAddress 127.0.0.1"},
		{name: "a chain", id: name, cert: certSpec{dns: []string{"acme.test"}, chain: true}, protos: acme,
			wantErr: "incorrectResponse: acme.test:PORT presented 2 certificates; want one"},
		{name: "no acme-tls/1", id: name, cert: certSpec{dns: []string{"acme.test"}},
			wantErr: `unauthorized: acme.test:PORT negotiated protocol ""; want "acme-tls/1"`},
		{name: "only h2", id: name, cert: certSpec{dns: []string{"acme.test"}}, protos: []string{"h2"},
			wantErr: "tls: TLS handshake with acme.test:PORT for acme.test: remote error: tls: no application protocol"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, snis := startTLS(t, tt.cert.make(t), tt.protos)
			v := mustNew(t, Config{TLSPort: p, Resolver: dns.Addr, Allow: allowLo, Total: time.Second})
			err := v.TLSALPN01(context.Background(), tt.id, keyAuth)
			want := strings.ReplaceAll(tt.wantErr, "PORT", strconv.Itoa(p))
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), want)) {
				t.Fatalf("TLSALPN01(%v) = %v; want %q", tt.id, err, want)
			}
			if tt.wantSNI != "" {
				if got := <-snis; got != tt.wantSNI {
					t.Errorf("SNI = %q; want %q", got, tt.wantSNI)
				}
			}
		})
	}
}

func TestTLSALPN01Refused(t *testing.T) {
	v := mustNew(t, Config{})
	err := v.TLSALPN01(context.Background(), Identifier{"ip", "169.254.169.254"}, keyAuth)
	wantError(t, err, TypeRejectedIdentifier,
		"connecting to 169.254.169.254:443: connection to 169.254.169.254:443 refused: 169.254.169.254 is in the refused range 169.254.0.0/16")
}

// TestTLSALPN01NoHandshake is a server that accepts and never speaks TLS:
// TLSTimeout ends the handshake.
func TestTLSALPN01NoHandshake(t *testing.T) {
	v := mustNew(t, Config{TLSPort: startSilentTCP(t), Allow: allowLo, TLSTimeout: 300 * time.Millisecond})
	start := time.Now()
	err := v.TLSALPN01(context.Background(), localhost, keyAuth)
	wantError(t, err, TypeTLS, "no handshake within 300ms")
	if d := time.Since(start); d > time.Second {
		t.Errorf("TLSALPN01 took %v; want about 300ms", d)
	}
}
