package ca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"strings"
	"testing"
	"time"
)

// Apple refuses TLS server certificates whose notBefore to notAfter spans
// more than 825 days (support.apple.com/HT210176); the backdate of notBefore
// counts towards it.
func TestServerLifetimeWithinAppleLimit(t *testing.T) {
	const limit = 825 * 24 * time.Hour
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Now: fixedClock(now.Add(-time.Hour))})
	c.Now = fixedClock(now)
	tests := []struct {
		name     string
		validity time.Duration
		issue    func(Request) (*x509.Certificate, error)
	}{
		{"issue default", 0, func(r Request) (*x509.Certificate, error) {
			is, err := c.Issue(signer, r)
			if err != nil {
				return nil, err
			}
			return is.Cert, nil
		}},
		{"issue 825d", limit, func(r Request) (*x509.Certificate, error) {
			r.Force = true
			is, err := c.Issue(signer, r)
			if err != nil {
				return nil, err
			}
			return is.Cert, nil
		}},
		{"self-signed default", 0, func(r Request) (*x509.Certificate, error) {
			cert, _, err := SelfSigned(r, now)
			return cert, err
		}},
		{"self-signed 825d", limit, func(r Request) (*x509.Certificate, error) {
			cert, _, err := SelfSigned(r, now)
			return cert, err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert, err := tt.issue(Request{Name: "www.example.com", Profile: Server, Validity: tt.validity})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := cert.NotBefore, now.Add(-Backdate); !got.Equal(want) {
				t.Errorf("NotBefore = %v; want %v", got, want)
			}
			if got := cert.NotAfter.Sub(cert.NotBefore); got > limit {
				t.Errorf("notAfter - notBefore = %v; want at most %v", got, limit)
			}
			if got, want := cert.NotAfter, now.Add(-Backdate).Add(limit); !got.Equal(want) {
				t.Errorf("NotAfter = %v; want %v, the full lifetime from notBefore", got, want)
			}
		})
	}
}

// RFC 5280 (appendix A.1) and PKCS #9 give the subject's emailAddress the
// syntax IA5String; OpenSSL refuses any other under a name-constrained CA
// (X509_V_ERR_UNSUPPORTED_NAME_SYNTAX, error 53).
func TestSubjectEmailIsIA5String(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	csrKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  Request
	}{
		{"generated key", Request{Name: "alice", Profile: Client, Emails: []string{"alice@example.com"}, EmailInSubject: true}},
		{"CSR key", Request{Name: "bob", Profile: Client, Emails: []string{"bob@example.com", "b@example.com"}, EmailInSubject: true, PublicKey: csrKey.Public()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is, err := c.Issue(signer, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			found := 0
			for _, atv := range subjectAttributes(t, is.Cert.RawSubject) {
				if !atv.Type.Equal(oidEmailAddress) {
					continue
				}
				found++
				if v := atv.Value; v.Class != asn1.ClassUniversal || v.Tag != asn1.TagIA5String || string(v.Bytes) != tt.req.Emails[0] {
					t.Errorf("emailAddress is class %d tag %d %q; want an IA5String (tag %d) %q", v.Class, v.Tag, v.Bytes, asn1.TagIA5String, tt.req.Emails[0])
				}
			}
			if found != 1 {
				t.Errorf("subject %s has %d emailAddress attributes; want 1", is.Record.Subject, found)
			}
		})
	}
}

// attribute is one AttributeTypeAndValue of a DER name, its value undecoded.
type attribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// subjectAttributes returns the attributes of the DER name, in order.
func subjectAttributes(t *testing.T, name []byte) []attribute {
	t.Helper()
	var rdns []asn1.RawValue
	if rest, err := asn1.Unmarshal(name, &rdns); err != nil || len(rest) > 0 {
		t.Fatalf("parsing name: %v", err)
	}
	var all []attribute
	for _, set := range rdns {
		var atvs []attribute
		if _, err := asn1.UnmarshalWithParams(set.FullBytes, &atvs, "set"); err != nil {
			t.Fatalf("parsing name: %v", err)
		}
		all = append(all, atvs...)
	}
	return all
}

// notBefore is backdated by Backdate and the lifetime counts from it, so a
// lifetime of Backdate or less would give a certificate that expired before
// it was signed: Issue, Renew and SelfSigned refuse it, saying why, and
// write nothing. A lifetime a second longer is valid for that second.
func TestShortValidityRefused(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Now: fixedClock(now.Add(-time.Hour))})
	c.Now = fixedClock(now)
	tests := []struct {
		name     string
		validity time.Duration
		wantErr  string
	}{
		{"1s", time.Second, "validity too short: 1s would leave the certificate already expired when signed (notBefore is backdated 5m for clock skew, and the validity counts from it); it must be longer than 5m"},
		{"5m", 5 * time.Minute, "validity too short: 5m would leave the certificate already expired when signed"},
		{"5m0.5s", Backdate + time.Second/2, "validity too short: 5m0.5s would leave the certificate already expired when signed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Issue(signer, Request{Name: "short", Profile: Client, Validity: tt.validity})
			if !errors.Is(err, ErrValidityTooShort) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Issue(validity %v) error = %v; want ErrValidityTooShort containing %q", tt.validity, err, tt.wantErr)
			}
			if recs, err := c.RecordsByName("short"); err != nil || len(recs) != 0 {
				t.Errorf("after the refusal: records %v, %v; want none", recs, err)
			}
			if _, _, err := SelfSigned(Request{Name: "short.example.com", Profile: Server, Validity: tt.validity}, now); !errors.Is(err, ErrValidityTooShort) {
				t.Errorf("SelfSigned(validity %v) error = %v; want ErrValidityTooShort", tt.validity, err)
			}
		})
	}
	is, err := c.Issue(signer, Request{Name: "short", Profile: Client, Validity: MinValidity})
	if err != nil {
		t.Fatalf("Issue(validity MinValidity): %v", err)
	}
	if got, want := is.Cert.NotAfter, now.Add(time.Second); !got.Equal(want) {
		t.Errorf("NotAfter = %v; want %v, a second after it was signed", got, want)
	}
	if _, err := c.Renew(signer, is.Record, RenewOptions{Validity: time.Minute}); !errors.Is(err, ErrValidityTooShort) {
		t.Errorf("Renew(validity 1m) error = %v; want ErrValidityTooShort", err)
	}
}
