package ca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"minica/ca/store"
	"minica/ca/store/recordjson"
	"minica/revoke"
)

func newCSR(t *testing.T, key crypto.Signer, tmpl *x509.CertificateRequest) *x509.CertificateRequest {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	return csr
}

func TestRenew(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Validity: 5 * 365 * 24 * time.Hour, Now: fixedClock(start)})
	c.Now = fixedClock(start.Add(time.Hour))
	old, err := c.Issue(signer, Request{Name: "web", Profile: Server, DNSNames: []string{"web.example.com", "web"},
		IPs: []net.IP{net.ParseIP("10.0.0.5")}, Organization: []string{"Acme, Inc."}, Validity: 90 * 24 * time.Hour, KeyType: ECDSAP384})
	if err != nil {
		t.Fatal(err)
	}
	c.Now = fixedClock(start.Add(80 * 24 * time.Hour))
	rn, err := c.Renew(signer, old.Record, RenewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, was := rn.Cert, old.Cert
	if string(got.RawSubject) != string(was.RawSubject) {
		t.Errorf("subject = %q; want %q", got.Subject, was.Subject)
	}
	if !slices.Equal(SANs(got), SANs(was)) {
		t.Errorf("SANs = %v; want %v", SANs(got), SANs(was))
	}
	if got.NotAfter.Sub(got.NotBefore) != 90*24*time.Hour {
		t.Errorf("lifetime = %v; want 90d", got.NotAfter.Sub(got.NotBefore))
	}
	if got.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("EKU = %v; want serverAuth", got.ExtKeyUsage)
	}
	if samePublicKey(got.PublicKey, was.PublicKey) {
		t.Error("the successor kept the old key")
	}
	if kt := keyTypeOf(got.PublicKey); kt != ECDSAP384 {
		t.Errorf("key type = %s; want %s", kt, ECDSAP384)
	}
	if rn.Record.RenewalOf != old.Record.Serial || rn.Predecessor.RenewedBy != rn.Record.Serial {
		t.Errorf("links: successor.RenewalOf = %q, predecessor.RenewedBy = %q", rn.Record.RenewalOf, rn.Predecessor.RenewedBy)
	}
	// Both links are on disk, and the old certificate stays valid.
	pred, _ := c.Record(was.SerialNumber)
	succ, _ := c.Record(got.SerialNumber)
	if pred.RenewedBy != succ.Serial || succ.RenewalOf != pred.Serial || pred.Status != StatusValid {
		t.Errorf("on disk: predecessor %+v, successor %+v", pred, succ)
	}
	// The name's current certificate is the successor.
	cur, err := c.Current("web")
	if err != nil || cur.Serial != succ.Serial {
		t.Errorf("Current = %v, %v; want serial %s", cur, err, succ.Serial)
	}
	// Renewing the old one again is refused with the successor's serial.
	_, err = c.Renew(signer, pred, RenewOptions{})
	var ar *AlreadyRenewedError
	if !errors.As(err, &ar) || ar.Successor != succ.Serial {
		t.Fatalf("second renewal: %v; want AlreadyRenewedError naming %s", err, succ.Serial)
	}
	want := `certificate "web" (serial ` + pred.Serial + `) was already renewed by serial ` + succ.Serial
	if err.Error() != want {
		t.Errorf("error = %q; want %q", err, want)
	}
	// With Force it gets a second successor, and links to the newest.
	rn2, err := c.Renew(signer, pred, RenewOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if pred, _ = c.Record(was.SerialNumber); pred.RenewedBy != rn2.Record.Serial {
		t.Errorf("RenewedBy = %q; want the newest successor %q", pred.RenewedBy, rn2.Record.Serial)
	}
}

func TestRenewRefusals(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Validity: 2 * 365 * 24 * time.Hour, Now: fixedClock(start)})
	c.Now = fixedClock(start.Add(time.Hour))
	issue := func(req Request) *Issued {
		t.Helper()
		req.Force = true
		is, err := c.Issue(signer, req)
		if err != nil {
			t.Fatal(err)
		}
		return is
	}
	simon := issue(Request{Name: "simon", Profile: Client, Emails: []string{"simon@example.com"}, EmailInSubject: true, Validity: 30 * 24 * time.Hour})
	revoked := issue(Request{Name: "gone", Profile: Client, Validity: 30 * 24 * time.Hour})
	if _, err := c.RevokeRecord(revoked.Record, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	long := issue(Request{Name: "long", Profile: Client, Validity: 500 * 24 * time.Hour})
	csrKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signed := issue(Request{Name: "ext", Profile: Client, PublicKey: csrKey.Public(), Validity: 30 * 24 * time.Hour})
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	later := start.Add(40 * 24 * time.Hour) // simon expired
	caEnd := c.Cert.NotAfter.UTC().Format(time.RFC3339)

	ekuExt := func(id asn1.ObjectIdentifier) pkix.Extension {
		v, _ := asn1.Marshal([]asn1.ObjectIdentifier{id})
		return pkix.Extension{Id: oidExtKeyUsage, Value: v}
	}
	bcExt, _ := asn1.Marshal(struct{ IsCA bool }{true})
	kuExt, _ := asn1.Marshal(asn1.BitString{Bytes: []byte{0x84}, BitLength: 6}) // digitalSignature, keyCertSign

	tests := []struct {
		name    string
		rec     *Record
		now     time.Time
		opts    RenewOptions
		is      error
		wantErr string
	}{
		{"revoked", revoked.Record, start.Add(2 * time.Hour), RenewOptions{}, ErrRenewRevoked,
			`certificate "gone" (serial ` + revoked.Record.Serial + `) was revoked on 2030-01-02T04:04:05Z (keyCompromise): a revoked certificate cannot be renewed`},
		{"expired without AllowExpired", simon.Record, later, RenewOptions{}, ErrRenewExpired,
			`certificate "simon" (serial ` + simon.Record.Serial + `) expired on 2030-02-01T03:59:05Z: an expired certificate cannot be renewed`},
		{"outlives the CA", long.Record, start.Add(400 * 24 * time.Hour), RenewOptions{}, ErrOutlivesCA,
			`renewing "long" (serial ` + long.Record.Serial + `): certificate would outlive the CA: validity 500d would end on 2032-06-20T02:59:05Z, after the CA certificate expires on ` + caEnd},
		{"signed without CSR", signed.Record, start.Add(2 * time.Hour), RenewOptions{}, ErrNoRenewalKey,
			`certificate "ext" (serial ` + signed.Record.Serial + `) was signed from a CSR: minica does not hold the key of this certificate`},
		{"CSR with the old key", signed.Record, start.Add(2 * time.Hour),
			RenewOptions{CSR: newCSR(t, csrKey, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "ext"}})}, ErrSameKey,
			"the CSR carries the key of serial " + signed.Record.Serial + ": the request keeps the old key"},
		{"CSR for another CN", simon.Record, start.Add(2 * time.Hour),
			RenewOptions{CSR: newCSR(t, other, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "mallory"}})}, ErrNotRenewal,
			`the request asks for subject "CN=mallory", but serial ` + simon.Record.Serial + ` has "emailAddress=simon@example.com,CN=simon": changing the identity is not a renewal`},
		{"CSR for more SANs", simon.Record, start.Add(2 * time.Hour),
			RenewOptions{CSR: newCSR(t, other, &x509.CertificateRequest{EmailAddresses: []string{"simon@example.com", "boss@example.com"}})}, ErrNotRenewal,
			"the request asks for SANs email:simon@example.com, email:boss@example.com, but serial " + simon.Record.Serial + " has email:simon@example.com: changing the identity is not a renewal"},
		{"CSR for serverAuth", simon.Record, start.Add(2 * time.Hour),
			RenewOptions{CSR: newCSR(t, other, &x509.CertificateRequest{ExtraExtensions: []pkix.Extension{ekuExt(oidServerAuth)}})}, ErrNotRenewal,
			"the request asks for extKeyUsage serverAuth, but serial " + simon.Record.Serial + " has clientAuth: changing the identity is not a renewal"},
		{"CSR for CA:TRUE", simon.Record, start.Add(2 * time.Hour),
			RenewOptions{CSR: newCSR(t, other, &x509.CertificateRequest{ExtraExtensions: []pkix.Extension{{Id: oidBasicConstraints, Value: bcExt}}})}, ErrNotRenewal,
			"the request asks for basicConstraints CA:TRUE, but serial " + simon.Record.Serial + " has CA:FALSE: changing the identity is not a renewal"},
		{"CSR for keyCertSign", simon.Record, start.Add(2 * time.Hour),
			RenewOptions{CSR: newCSR(t, other, &x509.CertificateRequest{ExtraExtensions: []pkix.Extension{{Id: oidKeyUsage, Value: kuExt}}})}, ErrNotRenewal,
			"the request asks for keyUsage digitalSignature, keyCertSign, but serial " + simon.Record.Serial + " has digitalSignature: changing the identity is not a renewal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.Now = fixedClock(tt.now)
			before := countRecords(t, c)
			_, err := c.Renew(signer, tt.rec, tt.opts)
			if !errors.Is(err, tt.is) || err.Error() != tt.wantErr {
				t.Fatalf("Renew() error = %v;\nwant %q (%v)", err, tt.wantErr, tt.is)
			}
			if n := countRecords(t, c); n != before {
				t.Errorf("records = %d after a refusal; want %d", n, before)
			}
		})
	}

	t.Run("expired with AllowExpired", func(t *testing.T) {
		c.Now = fixedClock(later)
		rn, err := c.Renew(signer, simon.Record, RenewOptions{AllowExpired: true})
		if err != nil || !rn.Expired {
			t.Fatalf("Renew() = %v, %v; want a renewal marked Expired", rn, err)
		}
		if !rn.Cert.NotBefore.After(simon.Cert.NotAfter) || rn.Record.StatusAt(later) != StatusValid {
			t.Errorf("successor not valid now: %v-%v", rn.Cert.NotBefore, rn.Cert.NotAfter)
		}
	})
	t.Run("CSR with the same identity", func(t *testing.T) {
		c.Now = fixedClock(start.Add(2 * time.Hour))
		csr := newCSR(t, other, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "ext"}, ExtraExtensions: []pkix.Extension{ekuExt(oidClientAuth)}})
		rn, err := c.Renew(signer, signed.Record, RenewOptions{CSR: csr})
		if err != nil {
			t.Fatal(err)
		}
		if !samePublicKey(rn.Cert.PublicKey, other.Public()) || rn.Record.HasKey {
			t.Error("the successor must certify the CSR's key and store none")
		}
	})
	t.Run("CSR naming part of the identity", func(t *testing.T) {
		// sign put the email into the subject; the holder's CSR has only the CN.
		csr := newCSR(t, other, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "simon"}, EmailAddresses: []string{"simon@example.com"}})
		if err := CheckRenewalCSR(simon.Cert, Client, csr); err != nil {
			t.Errorf("CheckRenewalCSR() = %v; want nil", err)
		}
	})
	t.Run("reuse a key minica holds", func(t *testing.T) {
		c.Now = fixedClock(start.Add(2 * time.Hour))
		rn, err := c.Renew(signer, long.Record, RenewOptions{ReuseKey: true, Validity: 10 * 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if !samePublicKey(rn.Cert.PublicKey, long.Cert.PublicKey) || !rn.Record.HasKey || rn.KeyFile == "" {
			t.Error("ReuseKey must certify and store the old key")
		}
		if d := rn.Cert.NotAfter.Sub(rn.Cert.NotBefore); d != 10*24*time.Hour {
			t.Errorf("lifetime = %v; want the 10d asked for", d)
		}
	})
}

func TestRenewRSAServerCSRKeyUsage(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	is, err := c.Issue(signer, Request{Name: "rsa.example.com", Profile: Server, PublicKey: key.Public()})
	if err != nil {
		t.Fatal(err)
	}
	newKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ku, _ := asn1.Marshal(asn1.BitString{Bytes: []byte{0xa0}, BitLength: 3}) // digitalSignature, keyEncipherment
	csr := newCSR(t, newKey, &x509.CertificateRequest{DNSNames: []string{"rsa.example.com"},
		ExtraExtensions: []pkix.Extension{{Id: oidKeyUsage, Value: ku}}})
	if err := CheckRenewalCSR(is.Cert, Server, csr); err != nil {
		t.Errorf("CheckRenewalCSR() = %v; want nil", err)
	}
}

func TestRecordWithoutLinksParses(t *testing.T) {
	// A record written before renewal existed.
	line := `{"serial":"0123456789abcdef0123456789abcdef","name":"old","profile":"client","status":"valid","has_key":true,"issued_at":"2026-01-01T00:00:00Z"}` + "\n"
	r, err := recordjson.Decode([]byte(line))
	if err != nil || r.RenewalOf != "" || r.RenewedBy != "" {
		t.Fatalf("DecodeRecord = %+v, %v", r, err)
	}
	if s := string(store.EncodeRecord(r)); strings.Contains(s, "renew") {
		t.Errorf("a record without links encodes them: %s", s)
	}
}

func TestTargetRenewable(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Now: fixedClock(start)})
	c.Now = fixedClock(start.Add(time.Hour))
	is, err := c.Issue(signer, Request{Name: "simon", Profile: Client})
	if err != nil {
		t.Fatal(err)
	}
	tgt, _ := c.Resolve("simon")
	if r, err := tgt.Renewable(c.Now()); err != nil || r.Serial != is.Record.Serial {
		t.Fatalf("Renewable = %v, %v", r, err)
	}
	c.Now = fixedClock(start.Add(2 * time.Hour))
	rn, err := c.Renew(signer, is.Record, RenewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tgt, _ = c.Resolve("simon")
	if r, _ := tgt.Renewable(c.Now()); r.Serial != rn.Record.Serial {
		t.Errorf("Renewable after renewal = %s; want the successor %s", r.Serial, rn.Record.Serial)
	}
	if _, err := c.RevokeRecord(rn.Record, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	// The old one is valid but renewed, and the successor is revoked:
	// the newest (revoked) is chosen, and renewing it is refused.
	tgt, _ = c.Resolve("simon")
	r, _ := tgt.Renewable(c.Now())
	if r.Serial != rn.Record.Serial {
		t.Errorf("Renewable = %s; want the revoked newest %s", r.Serial, rn.Record.Serial)
	}
	if err := CheckRenewable(r, c.Now(), RenewOptions{}); !errors.Is(err, ErrRenewRevoked) {
		t.Errorf("CheckRenewable = %v; want ErrRenewRevoked", err)
	}
}

func TestCheckRestoresRenewalLink(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	is, err := c.Issue(signer, Request{Name: "simon", Profile: Client})
	if err != nil {
		t.Fatal(err)
	}
	rn, err := c.Renew(signer, is.Record, RenewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A power loss undoes the unsynced append of renewed_by.
	data, _ := c.dir.ReadFile(recordPath(is.Record.Serial))
	lines := strings.SplitAfter(string(data), "\n")
	if err := c.dir.WriteAtomic(recordPath(is.Record.Serial), []byte(strings.Join(lines[:len(lines)-2], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, _ := c.recordHex(is.Record.Serial); r.RenewedBy != "" {
		t.Fatalf("the test did not undo the link: %+v", r)
	}
	rep, err := c.Check()
	if err != nil {
		t.Fatal(err)
	}
	want := "linked simon (serial " + is.Record.Serial + ") to its successor " + rn.Record.Serial
	if !slices.Contains(rep.Repaired, want) {
		t.Errorf("Check repaired %q; want %q", rep.Repaired, want)
	}
	if r, _ := c.recordHex(is.Record.Serial); r.RenewedBy != rn.Record.Serial {
		t.Errorf("RenewedBy = %q after Check; want %q", r.RenewedBy, rn.Record.Serial)
	}
	if rep, _ := c.Check(); len(rep.Repaired) != 0 {
		t.Errorf("a second Check repaired %q", rep.Repaired)
	}
}
