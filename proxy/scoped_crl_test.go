package proxy

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"strings"
	"testing"
	"time"
)

// TestScopedCRLIsRefused: a CRL that covers only CA certificates lists no
// client, so taking it for the complete CRL would let revoked clients back
// in. The proxy refuses it at start and on reload, and keeps the last good
// CRL, with the issuing distribution point critical or not.
func TestScopedCRLIsRefused(t *testing.T) {
	for _, critical := range []bool{true, false} {
		t.Run(map[bool]string{true: "critical", false: "not critical"}[critical], func(t *testing.T) {
			e := newEnv(t, nil)
			cert, key := e.ca.Client(t, "alice")
			e.setCRL(e.makeCRL(cert.SerialNumber))
			if err := e.p.Reload(); err != nil {
				t.Fatalf("Reload() error = %v", err)
			}
			if _, err := e.client(cert, key, false).Get(e.url("/")); err == nil {
				t.Fatal("revoked client got through")
			}

			// onlyContainsCACerts [2] TRUE
			idp := pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 28}, Critical: critical,
				Value: []byte{0x30, 0x03, 0x82, 0x01, 0xff}}
			der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
				Number: big.NewInt(100), ThisUpdate: e.now().Add(-time.Minute), NextUpdate: e.now().Add(time.Hour),
				ExtraExtensions: []pkix.Extension{idp},
			}, e.ca.Cert, e.ca.Key)
			if err != nil {
				t.Fatal(err)
			}
			e.setCRL(der)
			const want = "revoke: not a complete CRL for client certificates: issuing distribution point has onlyContainsCACerts"
			if err := e.p.Reload(); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Reload() error = %v; want containing %q", err, want)
			}
			if _, err := e.client(cert, key, false).Get(e.url("/")); err == nil {
				t.Error("after the scoped CRL, the revoked client got through")
			}
			e.waitLog("reload-failed", want)

			cfg := e.p.cfg
			cfg.CRL = crlFunc(func() ([]byte, error) { return der, nil })
			if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("New() error = %v; want containing %q", err, want)
			}
		})
	}
}
