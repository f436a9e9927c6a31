package ca

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ReadPublishedCRL hands out the published CRL with its DER, and a new
// stamp after every publish; a symlink planted as crl.der (to the CA key,
// inside the directory) is refused rather than followed, and so is any
// non-CRL content.
func TestReadPublishedCRL(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	if _, err := c.ReadPublishedCRL(); !errors.Is(err, ErrNoCRL) {
		t.Fatalf("ReadPublishedCRL() without a CRL: error = %v; want ErrNoCRL", err)
	}
	info, err := c.PublishCRL(signer, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ReadPublishedCRL()
	if err != nil {
		t.Fatalf("ReadPublishedCRL() error = %v", err)
	}
	if !bytes.Equal(got.DER, info.DER) || got.CRL.Number().Cmp(info.Number) != 0 {
		t.Fatalf("ReadPublishedCRL() = number %s; want the published %s with its DER", got.CRL.Number(), info.Number)
	}
	stamp, err := c.CRLStamp()
	if err != nil || stamp != got.Stamp {
		t.Fatalf("CRLStamp() = %v, %v; want %v", stamp, err, got.Stamp)
	}
	if _, err := c.PublishCRL(signer, time.Hour); err != nil {
		t.Fatal(err)
	}
	if again, err := c.CRLStamp(); err != nil || again == stamp {
		t.Fatalf("CRLStamp() after a publish = %v, %v; want a new stamp", again, err)
	}

	der := filepath.Join(c.Dir().Path(), CRLDERFile)
	if err := os.Remove(der); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(keyFile, der); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CRLStamp(); !errors.Is(err, ErrNotRegular) {
		t.Errorf("CRLStamp() of a symlink: error = %v; want ErrNotRegular", err)
	}
	if got, err := c.ReadPublishedCRL(); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadPublishedCRL() of a symlink = %v, %v; want ErrNotRegular", got, err)
	}

	os.Remove(der)
	key, err := os.ReadFile(filepath.Join(c.Dir().Path(), keyFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(der, key, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ReadPublishedCRL(); err == nil {
		t.Errorf("ReadPublishedCRL() of a copy of the key = %v; want an error", got)
	}
}
