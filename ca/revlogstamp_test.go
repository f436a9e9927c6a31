package ca

import (
	"testing"

	"minica/revoke"
)

// The revocation log's stamp is zero before any revocation and changes with
// each one.
func TestRevocationLogStamp(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	stamp := func() FileStamp {
		t.Helper()
		s, err := c.RevocationLogStamp()
		if err != nil {
			t.Fatalf("RevocationLogStamp() error = %v", err)
		}
		return s
	}
	if s := stamp(); s != (FileStamp{}) {
		t.Fatalf("before any revocation: %+v; want the zero stamp", s)
	}
	var last FileStamp
	for _, name := range []string{"alice", "bob"} {
		is, err := c.Issue(signer, Request{Name: name, Profile: Client})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Revoke(is.Cert.SerialNumber, revoke.KeyCompromise); err != nil {
			t.Fatal(err)
		}
		s := stamp()
		if s == (FileStamp{}) || s == last {
			t.Errorf("after revoking %s: %+v; want a new stamp (last %+v)", name, s, last)
		}
		last = s
	}
	if s := stamp(); s != last {
		t.Errorf("with no change: %+v; want %+v", s, last)
	}
}
