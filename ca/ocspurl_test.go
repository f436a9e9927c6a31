package ca

import (
	"crypto/x509"
	"encoding/asn1"
	"slices"
	"testing"
	"time"

	"minica/internal/certlint"
)

func TestSetOCSPURL(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Now: fixedClock(start)})
	c.Now = fixedClock(start)
	const u = "http://pki.example.com/ocsp"
	if err := c.SetOCSPURL(u); err != nil {
		t.Fatalf("SetOCSPURL() error = %v", err)
	}
	reopened, err := Open(c.Dir().Path())
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	if reopened.Settings.OCSPURL != u {
		t.Errorf("settings after reopening: OCSP URL %q; want %q", reopened.Settings.OCSPURL, u)
	}
	for _, p := range []Profile{Client, Server} {
		req := Request{Name: "leaf-" + string(p), Profile: p}
		if p == Server {
			req.DNSNames = []string{"web.example.com"}
		}
		is, err := c.Issue(signer, req)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(is.Cert.OCSPServer, []string{u}) {
			t.Errorf("%s: OCSP servers %q; want %q", p, is.Cert.OCSPServer, u)
		}
		certlint.Certificate(t, is.Cert.Raw)
	}
	for _, bad := range []string{"ftp://x.example/ocsp", "http:///ocsp", "pki.example.com/ocsp", "http://a b/", "http://user@x.example/", "http://x.example/é"} {
		if err := c.SetOCSPURL(bad); err == nil {
			t.Errorf("SetOCSPURL(%q) accepted", bad)
		} else if want := "invalid OCSP URL " + printable(bad) + ": want an http:// or https:// URL such as http://pki.example.com/ocsp"; err.Error() != want {
			t.Errorf("SetOCSPURL(%q) error = %q; want %q", bad, err, want)
		}
	}
	if c.Settings.OCSPURL != u {
		t.Errorf("a refused URL changed the settings to %q", c.Settings.OCSPURL)
	}
	if err := c.SetOCSPURL(""); err != nil || c.Settings.OCSPURL != "" {
		t.Errorf("SetOCSPURL(\"\") = %v, URL %q; want cleared", err, c.Settings.OCSPURL)
	}
	is, err := c.Issue(signer, Request{Name: "after-clear", Profile: Client})
	if err != nil {
		t.Fatal(err)
	}
	if len(is.Cert.OCSPServer) != 0 {
		t.Errorf("after clearing: OCSP servers %q; want none", is.Cert.OCSPServer)
	}
}

func TestIssueOCSPResponder(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Now: fixedClock(start)})
	c.Now = fixedClock(start)
	if err := c.SetOCSPURL("http://pki.example.com/ocsp"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetCRLURL("http://pki.example.com/crl.der"); err != nil {
		t.Fatal(err)
	}
	is, err := c.Issue(signer, Request{Name: "minica-ocsp", Profile: OCSP, CommonName: "OCSP responder"})
	if err != nil {
		t.Fatalf("Issue(ocsp) error = %v", err)
	}
	cert := is.Cert
	if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageOCSPSigning}) || cert.KeyUsage != x509.KeyUsageDigitalSignature || cert.IsCA {
		t.Errorf("EKU %v, key usage %v, CA %v; want OCSPSigning only, digitalSignature, not a CA", cert.ExtKeyUsage, cert.KeyUsage, cert.IsCA)
	}
	noCheck := false
	for _, e := range cert.Extensions {
		if e.Id.Equal(asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 48, 1, 5}) {
			noCheck = !e.Critical && slices.Equal(e.Value, []byte{5, 0})
		}
	}
	if !noCheck {
		t.Errorf("no non-critical id-pkix-ocsp-nocheck extension with a NULL value")
	}
	if len(cert.OCSPServer) != 0 || len(cert.CRLDistributionPoints) != 0 {
		t.Errorf("OCSP servers %q, CRL points %q; want none on a responder certificate", cert.OCSPServer, cert.CRLDistributionPoints)
	}
	if got, want := cert.NotAfter.Sub(cert.NotBefore), DefaultOCSPResponderValidity; got != want {
		t.Errorf("lifetime %v; want %v", got, want)
	}
	if is.Record.Profile != OCSP || is.Key == nil {
		t.Errorf("record profile %q, key %v; want ocsp and a stored key", is.Record.Profile, is.Key)
	}
	if got := profileOf(cert); got != OCSP {
		t.Errorf("profileOf() = %q; want ocsp", got)
	}
	if _, err := ParseProfile("ocsp"); err == nil {
		t.Errorf("ParseProfile(ocsp) accepted: users issue only server and client certificates")
	}
	certlint.Certificate(t, cert.Raw)
}
