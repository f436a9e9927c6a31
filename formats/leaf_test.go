package formats_test

import (
	"crypto/x509"
	"errors"
	"testing"

	"minica/formats"
	"minica/internal/testca"
)

func TestSplitLeaf(t *testing.T) {
	root := testca.New(t, "Root")
	alice, aliceKey := root.Client(t, "alice")
	bob, _ := root.Client(t, "bob")
	tests := []struct {
		name      string
		certs     []*x509.Certificate
		wantLeaf  *x509.Certificate
		wantChain []*x509.Certificate
		wantErr   string
	}{
		{name: "leaf first", certs: []*x509.Certificate{alice, root.Cert}, wantLeaf: alice, wantChain: []*x509.Certificate{root.Cert}},
		{name: "leaf last keeps the order of the others", certs: []*x509.Certificate{root.Cert, bob, alice},
			wantLeaf: alice, wantChain: []*x509.Certificate{root.Cert, bob}},
		{name: "leaf alone", certs: []*x509.Certificate{alice}, wantLeaf: alice},
		{name: "no match", certs: []*x509.Certificate{bob}, wantErr: "private key does not match the certificate (checked 1 certificate)"},
		{name: "no match among two", certs: []*x509.Certificate{bob, root.Cert}, wantErr: "private key does not match the certificate (checked 2 certificates)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]*x509.Certificate{}, tt.certs...)
			leaf, chain, err := formats.SplitLeaf(aliceKey, tt.certs)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || !errors.Is(err, formats.ErrKeyMismatch) {
					t.Fatalf("SplitLeaf() error = %v; want %q matching ErrKeyMismatch", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if leaf != tt.wantLeaf {
				t.Errorf("leaf %s; want %s", leaf.Subject, tt.wantLeaf.Subject)
			}
			if len(chain) != len(tt.wantChain) {
				t.Fatalf("chain of %d; want %d", len(chain), len(tt.wantChain))
			}
			for i := range chain {
				if chain[i] != tt.wantChain[i] {
					t.Errorf("chain[%d] = %s; want %s", i, chain[i].Subject, tt.wantChain[i].Subject)
				}
			}
			for i := range in {
				if tt.certs[i] != in[i] {
					t.Errorf("SplitLeaf changed its input at %d", i)
				}
			}
		})
	}
}
