package ca

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"minica/revoke"
)

// tokenCSR is a CSR for key naming dns (none: an empty subject and no SAN,
// what the agent sends).
func tokenCSR(t *testing.T, key crypto.Signer, dns ...string) *x509.CertificateRequest {
	t.Helper()
	return newCSR(t, key, &x509.CertificateRequest{DNSNames: dns})
}

func TestRedeemTokenIssuesTheTokensIdentityOnce(t *testing.T) {
	c, signer := newEnrollCA(t)
	id := EnrollIdentity{Profile: Server, DNSNames: []string{"web2.svc.example.com"}, IPs: []net.IP{net.ParseIP("10.1.0.7")}}
	got, err := c.CreateToken("web2", id, DefaultTokenLifetime)
	if err != nil {
		t.Fatalf("CreateToken() error = %v", err)
	}
	if got.Enrollment.Kind != KindToken || !got.Enrollment.ExpiresAt.Equal(enrollStart.Add(time.Hour)) {
		t.Fatalf("token enrollment = %+v; want kind token, expiring in 1h", got.Enrollment)
	}
	key := newKey(t)
	// The CSR may name some of the token's names, or none.
	issued, e, err := c.RedeemToken(signer, got.Token, "192.0.2.9", tokenCSR(t, key, "web2.svc.example.com"))
	if err != nil {
		t.Fatalf("RedeemToken() error = %v", err)
	}
	cert := issued.Cert
	if !key.PublicKey.Equal(cert.PublicKey) || issued.Record.HasKey {
		t.Error("the certificate does not certify the CSR's key, or a key was kept")
	}
	if want := []string{"dns:web2.svc.example.com", "ip:10.1.0.7"}; !slices.Equal(SANs(cert), want) {
		t.Errorf("SANs %v; want %v", SANs(cert), want)
	}
	if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) || issued.Record.Profile != Server {
		t.Errorf("extKeyUsage %v, profile %s; want a server certificate", cert.ExtKeyUsage, issued.Record.Profile)
	}
	if e.Status != EnrollUsed || e.UsedFrom != "192.0.2.9" || e.Serial != issued.Record.Serial {
		t.Errorf("token after use = %+v", e)
	}
	// Good once.
	_, _, err = c.RedeemToken(signer, got.Token, "192.0.2.9", tokenCSR(t, newKey(t)))
	var spent *EnrollmentSpentError
	if !errors.As(err, &spent) || spent.Status != EnrollUsed {
		t.Fatalf("second RedeemToken() error = %v; want used", err)
	}
	if recs, _ := c.RecordsByName("web2"); len(recs) != 1 {
		t.Errorf("%d records for web2; want 1", len(recs))
	}
}

func TestTokensAndLinksDoNotOpenEachOther(t *testing.T) {
	c, signer := newEnrollCA(t)
	link, err := c.CreateEnrollment("simon", EnrollIdentity{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.CreateToken("web3", EnrollIdentity{Profile: Server}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.RedeemToken(signer, link.Token, "", tokenCSR(t, newKey(t))); !errors.Is(err, ErrEnrollmentUnknown) {
		t.Errorf("RedeemToken(a link's token) error = %v; want ErrEnrollmentUnknown", err)
	}
	if _, _, err := c.Enroll(signer, tok.Token, "", newKey(t).Public()); !errors.Is(err, ErrEnrollmentUnknown) {
		t.Errorf("Enroll(a bootstrap token) error = %v; want ErrEnrollmentUnknown", err)
	}
	if _, err := c.LookupEnrollment(tok.Token); !errors.Is(err, ErrEnrollmentUnknown) {
		t.Errorf("LookupEnrollment(a bootstrap token) error = %v; want ErrEnrollmentUnknown", err)
	}
	// Neither was spent by the attempt.
	for _, ref := range []string{"simon", "web3"} {
		if e, err := c.EnrollmentByName(ref); err != nil || e.Status != EnrollPending {
			t.Errorf("%s after the wrong door: %+v, %v; want pending", ref, e, err)
		}
	}
	// Each is cancelled only as its own kind.
	var kind *EnrollKindError
	if _, err := c.CancelEnrollment(KindLink, "web3"); !errors.As(err, &kind) || kind.Enrollment.Kind != KindToken {
		t.Errorf("CancelEnrollment(KindLink, a token's name) error = %v; want *EnrollKindError", err)
	}
	if e, _ := c.LookupToken(tok.Token); e == nil || e.Status != EnrollPending {
		t.Errorf("token after a cancel of the wrong kind: %+v; want pending", e)
	}
	// One pending secret a name, of either kind.
	if _, err := c.CreateToken("simon", EnrollIdentity{}, time.Hour); !errors.Is(err, ErrEnrollmentPending) {
		t.Errorf("CreateToken(a name with a pending link) error = %v; want ErrEnrollmentPending", err)
	}
}

func TestRedeemTokenRefusesBadCSRsAndKeepsTheToken(t *testing.T) {
	c, signer := newEnrollCA(t)
	tok, err := c.CreateToken("web4", EnrollIdentity{Profile: Server, DNSNames: []string{"web4.example.com"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	badSig := tokenCSR(t, newKey(t))
	badSig.Signature[len(badSig.Signature)-1] ^= 1
	caDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{ExtraExtensions: []pkix.Extension{
		{Id: asn1.ObjectIdentifier{2, 5, 29, 19}, Critical: true, Value: []byte{0x30, 0x03, 0x01, 0x01, 0xff}},
	}}, newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	asksCA, _ := x509.ParseCertificateRequest(caDER)
	for name, csr := range map[string]*x509.CertificateRequest{
		"bad signature":      badSig,
		"weak key":           tokenCSR(t, weak),
		"CA:TRUE":            asksCA,
		"a name not its own": tokenCSR(t, newKey(t), "web4.example.com", "bank.example.com"),
	} {
		if _, _, err := c.RedeemToken(signer, tok.Token, "", csr); !errors.Is(err, ErrTokenCSR) {
			t.Errorf("%s: RedeemToken() error = %v; want ErrTokenCSR", name, err)
		}
	}
	if e, err := c.LookupToken(tok.Token); err != nil || e.Status != EnrollPending {
		t.Fatalf("token after bad CSRs: %+v, %v; want pending", e, err)
	}
	if _, _, err := c.RedeemToken(signer, tok.Token, "", tokenCSR(t, newKey(t))); err != nil {
		t.Errorf("RedeemToken() with a good CSR after bad ones: %v", err)
	}
}

func TestRedeemTokenExpired(t *testing.T) {
	c, signer := newEnrollCA(t)
	tok, err := c.CreateToken("web5", EnrollIdentity{Profile: Client}, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c.Now = fixedClock(enrollStart.Add(10 * time.Minute))
	_, _, err = c.RedeemToken(signer, tok.Token, "", tokenCSR(t, newKey(t)))
	var spent *EnrollmentSpentError
	if !errors.As(err, &spent) || spent.Status != EnrollExpired {
		t.Fatalf("RedeemToken() of an expired token error = %v; want expired", err)
	}
	if recs, _ := c.RecordsByName("web5"); len(recs) != 0 {
		t.Errorf("%d records for web5; want none", len(recs))
	}
}

func TestTokenProfiles(t *testing.T) {
	c, _ := newEnrollCA(t)
	if _, err := c.CreateToken("ocsp1", EnrollIdentity{Profile: OCSP}, time.Hour); err == nil {
		t.Error("CreateToken(profile ocsp) = nil; want an error")
	}
	if err := c.CheckEnrollment("web6", EnrollIdentity{Profile: Server}, time.Hour); err == nil {
		t.Error("CheckEnrollment(a server link) = nil; want an error: links are for people")
	}
	if _, err := c.CreateToken("web6", EnrollIdentity{Profile: Server, KeyType: Ed25519}, time.Hour); err != nil {
		t.Errorf("CreateToken(ed25519) = %v; a machine's key may be Ed25519", err)
	}
}

func TestRedeemTokenAgainWithTheSameKey(t *testing.T) {
	c, signer := newEnrollCA(t)
	tok, err := c.CreateToken("web7", EnrollIdentity{Profile: Server}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	key := newKey(t)
	first, _, err := c.RedeemToken(signer, tok.Token, "192.0.2.1", tokenCSR(t, key))
	if err != nil {
		t.Fatal(err)
	}
	// The answer was lost: the same key asks again and gets the same
	// certificate, nothing new issued.
	again, e, err := c.RedeemToken(signer, tok.Token, "192.0.2.1", tokenCSR(t, key))
	if err != nil || !again.Cert.Equal(first.Cert) || e.Status != EnrollUsed {
		t.Fatalf("RedeemToken() again with the same key = %v, %+v, %v; want the same certificate", again, e, err)
	}
	if recs, _ := c.RecordsByName("web7"); len(recs) != 1 {
		t.Errorf("%d records for web7; want 1", len(recs))
	}
	// Another key is another machine: the token is spent.
	var spent *EnrollmentSpentError
	if _, _, err := c.RedeemToken(signer, tok.Token, "198.51.100.2", tokenCSR(t, newKey(t))); !errors.As(err, &spent) {
		t.Errorf("RedeemToken() with another key error = %v; want the token used", err)
	}
	// A revoked certificate is not handed out again.
	if _, err := c.RevokeRecord(first.Record, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.RedeemToken(signer, tok.Token, "192.0.2.1", tokenCSR(t, key)); !errors.As(err, &spent) {
		t.Errorf("RedeemToken() after the revocation error = %v; want the token used", err)
	}
}

func TestRedeemTokenRefusesATakenNameAndKeepsTheToken(t *testing.T) {
	c, signer := newEnrollCA(t)
	tok, err := c.CreateToken("web8", EnrollIdentity{Profile: Server}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// The operator issued the name by hand meanwhile.
	if _, err := c.Issue(signer, Request{Name: "web8", Profile: Server}); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.RedeemToken(signer, tok.Token, "", tokenCSR(t, newKey(t)))
	var taken *NameTakenError
	if !errors.As(err, &taken) {
		t.Fatalf("RedeemToken() for a taken name error = %v; want *NameTakenError", err)
	}
	if e, err := c.LookupToken(tok.Token); err != nil || e.Status != EnrollPending {
		t.Fatalf("token after a taken name: %+v, %v; want pending", e, err)
	}
	// A spent token is spent whatever the CSR says.
	if _, err := c.CancelEnrollment(KindToken, "web8"); err != nil {
		t.Fatal(err)
	}
	bad := tokenCSR(t, newKey(t))
	bad.Signature[0] ^= 1
	var spent *EnrollmentSpentError
	if _, _, err := c.RedeemToken(signer, tok.Token, "", bad); !errors.As(err, &spent) || spent.Status != EnrollCancelled {
		t.Errorf("RedeemToken(a cancelled token, a bad CSR) error = %v; want cancelled", err)
	}
}
