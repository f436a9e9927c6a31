package ca

import (
	"crypto/x509"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/internal/certlint"
	"minica/revoke"
)

func TestPublishCRL(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Now: fixedClock(start)})
	c.Now = fixedClock(start)
	if _, err := c.LoadCRL(); !errors.Is(err, ErrNoCRL) {
		t.Fatalf("LoadCRL() before any CRL: error = %v; want ErrNoCRL", err)
	}
	var serials []*big.Int
	for _, name := range []string{"alice", "bob", "old", "carol"} {
		req := Request{Name: name, Profile: Client}
		if name == "old" {
			req.Validity = 24 * time.Hour
		}
		is, err := c.Issue(signer, req)
		if err != nil {
			t.Fatal(err)
		}
		serials = append(serials, is.Cert.SerialNumber)
	}
	alice, bob, old := serials[0], serials[1], serials[2]
	for s, r := range map[*big.Int]revoke.Reason{alice: revoke.KeyCompromise, bob: revoke.Unspecified, old: revoke.Superseded} {
		if _, err := c.Revoke(s, r); err != nil {
			t.Fatal(err)
		}
	}

	info, err := c.PublishCRL(signer, 0)
	if err != nil {
		t.Fatalf("PublishCRL() error = %v", err)
	}
	if info.Number.Int64() != start.UnixMilli() || info.Entries != 3 || !info.NextUpdate.Equal(start.Add(DefaultCRLLifetime)) {
		t.Errorf("PublishCRL() = number %v, %d entries, next %v; want %d, 3, %v", info.Number, info.Entries, info.NextUpdate, start.UnixMilli(), start.Add(DefaultCRLLifetime))
	}
	certlint.RevocationList(t, info.DER)
	crl, err := c.LoadCRL()
	if err != nil {
		t.Fatalf("LoadCRL() error = %v", err)
	}
	for _, s := range []*big.Int{alice, bob, old} {
		if !crl.IsRevoked(s) {
			t.Errorf("CRL does not list %x", s)
		}
	}
	if e, _ := crl.Lookup(alice); e.Reason != revoke.KeyCompromise || !e.RevokedAt.Equal(start) {
		t.Errorf("alice's entry = %+v; want keyCompromise at %v", e, start)
	}
	if crl.IsRevoked(serials[3]) {
		t.Errorf("CRL lists carol, who was not revoked")
	}
	pemData, err := os.ReadFile(info.PEMFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := revoke.ParseCRL(pemData, c.Cert); err != nil {
		t.Errorf("crl.pem: %v", err)
	}

	// Past the grace, the expired certificate leaves the CRL; the clock
	// going back and a lost number file never repeat a number.
	later := start.Add(24*time.Hour + ExpiredGrace + time.Second)
	c.Now = fixedClock(later)
	info, err = c.PublishCRL(signer, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if info.Number.Int64() != later.UnixMilli() || info.Entries != 2 || info.NextUpdate.Sub(info.ThisUpdate) != time.Hour {
		t.Errorf("second CRL: number %v, %d entries, lifetime %v; want %d, 2, 1h", info.Number, info.Entries, info.NextUpdate.Sub(info.ThisUpdate), later.UnixMilli())
	}
	c.Now = fixedClock(start.Add(-time.Hour))
	if err := os.Remove(filepath.Join(c.Dir().Path(), crlNumberFile)); err != nil {
		t.Fatal(err)
	}
	info, err = c.PublishCRL(signer, 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.Number.Int64() != later.UnixMilli()+1 {
		t.Errorf("CRL number after losing the number file = %v; want %d, one above the published CRL", info.Number, later.UnixMilli()+1)
	}
	// Revocations later than the clock are listed at thisUpdate.
	got, err := x509.ParseRevocationList(info.DER)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got.RevokedCertificateEntries {
		if e.RevocationTime.After(got.ThisUpdate) {
			t.Errorf("entry %x revoked at %v, after thisUpdate %v", e.SerialNumber, e.RevocationTime, got.ThisUpdate)
		}
	}
	certlint.RevocationList(t, info.DER)
}

func TestPublishCRLRefusesCorruptState(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		file    string
		data    string
		wantErr string
	}{
		{"corrupt number file", crlNumberFile, "twelve\n", "corrupt CRL number file"},
		{"corrupt CRL", CRLDERFile, "garbage", "revoke: malformed CRL: not a DER CertificateList"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, signer := newTestCA(t, InitOptions{Now: fixedClock(start)})
			c.Now = fixedClock(start)
			if err := os.WriteFile(filepath.Join(c.Dir().Path(), tt.file), []byte(tt.data), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := c.PublishCRL(signer, 0); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("PublishCRL() error = %v; want containing %q", err, tt.wantErr)
			}
		})
	}
}
