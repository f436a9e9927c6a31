package ca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"testing"

	"minica/formats"
)

func TestLoadLeaf(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	issued, err := c.Issue(signer, Request{Name: "simon", Profile: Client, Emails: []string{"simon@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := c.LoadLeaf(issued.Record)
	if err != nil {
		t.Fatal(err)
	}
	if !leaf.Cert.Equal(issued.Cert) || formats.KeyMatchesCertificate(leaf.Key, leaf.Cert) != nil ||
		len(leaf.Chain) != 1 || !leaf.Chain[0].Equal(c.Cert) {
		t.Errorf("LoadLeaf() did not return the issued certificate, its key and the CA chain")
	}

	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := c.Issue(signer, Request{Name: "csr-client", Profile: Client, PublicKey: other.Public()})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err = c.LoadLeaf(signed.Record)
	if !errors.Is(err, ErrNoKey) || leaf == nil || leaf.Key != nil || !leaf.Cert.Equal(signed.Cert) {
		t.Fatalf("LoadLeaf(signed CSR) = %v, %v; want the certificate and ErrNoKey", leaf, err)
	}
	want := `minica does not hold the private key of this certificate ("csr-client", serial ` + signed.Record.Serial + ")"
	if err.Error() != want {
		t.Errorf("LoadLeaf() error = %q; want %q", err, want)
	}
}
