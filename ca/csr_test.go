package ca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func testCSR(t *testing.T, tmpl *x509.CertificateRequest) *x509.CertificateRequest {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	return csr
}

func TestMergeCSR(t *testing.T) {
	u, _ := url.Parse("spiffe://example.org/web")
	csr := testCSR(t, &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: "csr-cn", Organization: []string{"CSR Org"}, OrganizationalUnit: []string{"CSR OU"}},
		DNSNames: []string{"csr.example"}, IPAddresses: []net.IP{net.IPv4(10, 0, 0, 1)},
		EmailAddresses: []string{"csr@example.com"}, URIs: []*url.URL{u},
	})
	tests := []struct {
		name                  string
		req                   Request
		set                   CSRFields
		wantCN, wantO, wantOU string
		wantDNS               []string
	}{
		{name: "client takes the subject", req: Request{Profile: Client}, wantCN: "csr-cn", wantO: "CSR Org", wantOU: "CSR OU", wantDNS: []string{"csr.example"}},
		{name: "flags win", req: Request{Profile: Client, CommonName: "flag-cn", Organization: []string{"Flag Org"}, DNSNames: []string{"flag.example"}},
			set: CSRFields{CommonName: true, Organization: true}, wantCN: "flag-cn", wantO: "Flag Org", wantOU: "CSR OU",
			wantDNS: []string{"flag.example", "csr.example"}},
		{name: "server drops the CSR's CN", req: Request{Profile: Server}, wantO: "CSR Org", wantOU: "CSR OU", wantDNS: []string{"csr.example"}},
		{name: "server keeps a CN the caller chose", req: Request{Profile: Server, CommonName: "web"}, set: CSRFields{CommonName: true},
			wantCN: "web", wantO: "CSR Org", wantOU: "CSR OU", wantDNS: []string{"csr.example"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.req
			r.MergeCSR(csr, tt.set)
			if r.CommonName != tt.wantCN || strings.Join(r.Organization, ",") != tt.wantO || strings.Join(r.OrganizationalUnit, ",") != tt.wantOU {
				t.Errorf("subject CN=%q O=%q OU=%q; want %q %q %q", r.CommonName, r.Organization, r.OrganizationalUnit, tt.wantCN, tt.wantO, tt.wantOU)
			}
			if !slices.Equal(r.DNSNames, tt.wantDNS) {
				t.Errorf("DNSNames %v; want %v", r.DNSNames, tt.wantDNS)
			}
			if len(r.IPs) != 1 || !slices.Equal(r.Emails, []string{"csr@example.com"}) || !slices.Equal(r.URIs, []string{u.String()}) {
				t.Errorf("IPs %v, Emails %v, URIs %v; want the CSR's", r.IPs, r.Emails, r.URIs)
			}
			if r.PublicKey == nil || !r.PublicKey.(*ecdsa.PublicKey).Equal(csr.PublicKey) {
				t.Errorf("PublicKey is not the CSR's")
			}
		})
	}
}

func TestIgnoredCSRExtensions(t *testing.T) {
	bc := func(isCA bool) pkix.Extension {
		v, _ := asn1.Marshal(struct {
			IsCA bool `asn1:"optional"`
		}{isCA})
		return pkix.Extension{Id: oidBasicConstraints, Value: v}
	}
	ku := pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 15}, Value: []byte{3, 2, 5, 160}}
	other := pkix.Extension{Id: asn1.ObjectIdentifier{1, 2, 3, 4}, Value: []byte{5, 0}}
	tests := []struct {
		name string
		exts []pkix.Extension
		sans []string
		want []string
	}{
		{name: "SANs only", sans: []string{"a.example"}, want: nil},
		{name: "asks to be a CA", exts: []pkix.Extension{bc(true)}, want: []string{"basicConstraints (CA:TRUE)"}},
		{name: "CA:FALSE", exts: []pkix.Extension{bc(false)}, want: []string{"basicConstraints"}},
		{name: "known and unknown", exts: []pkix.Extension{ku, other}, sans: []string{"a.example"}, want: []string{"keyUsage", "extension 1.2.3.4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr := testCSR(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "x"}, DNSNames: tt.sans, ExtraExtensions: tt.exts})
			if got := IgnoredCSRExtensions(csr); !slices.Equal(got, tt.want) {
				t.Errorf("IgnoredCSRExtensions() = %q; want %q", got, tt.want)
			}
		})
	}
}
