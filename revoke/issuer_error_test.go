package revoke_test

import (
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"minica/internal/testca"
	"minica/revoke"
)

// A CRL of another CA, or of another key under the same name, is refused
// with an *IssuerError that names both sides, for a caller to say which
// CRL went where; it still matches ErrWrongIssuer, also through
// ParseCRLFile's bundle.
func TestIssuerError(t *testing.T) {
	now := time.Now()
	root, other, twin := testca.New(t, "Root"), testca.New(t, "Other"), testca.New(t, "Root")
	for _, tt := range []struct {
		name       string
		crl        []byte
		wantIssuer string
		otherKey   bool
	}{
		{"another CA", other.CRL(t, 1, now, time.Hour), "CN=Other", false},
		{"another key of the same name", twin.CRL(t, 1, now, time.Hour), "CN=Root", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := revoke.ParseCRLFile(tt.crl, []*x509.Certificate{root.Cert})
			var ie *revoke.IssuerError
			if !errors.Is(err, revoke.ErrWrongIssuer) || !errors.As(err, &ie) {
				t.Fatalf("ParseCRLFile() error = %v; want an *IssuerError matching ErrWrongIssuer", err)
			}
			if ie.CRLIssuer != tt.wantIssuer || ie.CA != "CN=Root" || ie.OtherKey != tt.otherKey {
				t.Errorf("IssuerError = %+v; want CRLIssuer %q, CA %q, OtherKey %v", ie, tt.wantIssuer, "CN=Root", tt.otherKey)
			}
		})
	}
}
