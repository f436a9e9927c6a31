package ca

import (
	"errors"
	"testing"
	"time"
)

func TestServerTLSCertificate(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	is, err := c.Issue(signer, Request{Name: "web", Profile: Server, DNSNames: []string{"web.example"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ServerTLSCertificate("web", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Certificate) != 1+len(c.Chain) || got.Leaf.SerialNumber.Cmp(is.Cert.SerialNumber) != 0 {
		t.Fatalf("%d certificates, leaf %v; want the leaf and the chain", len(got.Certificate), got.Leaf.SerialNumber)
	}
	for i, ca := range c.Chain {
		if string(got.Certificate[i+1]) != string(ca.Raw) {
			t.Errorf("certificate %d is not chain[%d]", i+1, i)
		}
	}
	if got.PrivateKey == nil {
		t.Error("no private key")
	}
	if _, err := c.ServerTLSCertificate("web", is.Cert.NotBefore.Add(-time.Second)); !errors.Is(err, ErrNoServerCert) {
		t.Errorf("before notBefore: %v; want ErrNoServerCert", err)
	}
}
