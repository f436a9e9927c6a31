package ca

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/formats"
	"minica/internal/certlint"
	"minica/revoke"
)

var hierNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// newRoot creates a root CA at hierNow.
func newRoot(t testing.TB, o InitOptions) (*CA, *Dir) {
	t.Helper()
	o.Root = true
	if o.CommonName == "" {
		o.CommonName = "Test Root"
	}
	o.Now, o.FirstCRL = fixedClock(hierNow), true
	c, err := Init(filepath.Join(t.TempDir(), "root"), o)
	if err != nil {
		t.Fatalf("Init(root): %v", err)
	}
	c.Now = fixedClock(hierNow)
	t.Cleanup(func() { c.Close() })
	return c, c.dir
}

func signerOf(t testing.TB, c *CA) crypto.Signer {
	t.Helper()
	s, err := c.LoadSigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newPending creates a pending intermediate asking for k.
func newPending(t testing.TB, cn string, k Constraints) *Pending {
	t.Helper()
	p, err := InitPending(filepath.Join(t.TempDir(), "int"), InitOptions{CommonName: cn,
		PermittedDNS: k.PermittedDNS, PermittedEmails: k.PermittedEmails, PermittedURIs: k.PermittedURIs, PermittedIPs: k.PermittedIPs,
		ExcludedDNS: k.ExcludedDNS, ExcludedEmails: k.ExcludedEmails, ExcludedURIs: k.ExcludedURIs, ExcludedIPs: k.ExcludedIPs})
	if err != nil {
		t.Fatalf("InitPending: %v", err)
	}
	return p
}

func signInt(t testing.TB, root *CA, name string, p *Pending, k Constraints) *Issued {
	t.Helper()
	is, err := root.SignIntermediate(signerOf(t, root), IntermediateRequest{Name: name, CSR: p.CSR, Constraints: k, Validity: 2 * 365 * 24 * time.Hour})
	if err != nil {
		t.Fatalf("SignIntermediate: %v", err)
	}
	return is
}

func rootCRL(t testing.TB, root *CA) []byte {
	t.Helper()
	if _, err := root.PublishCRL(signerOf(t, root), 0); err != nil {
		t.Fatal(err)
	}
	data, err := root.dir.ReadFile(CRLDERFile)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// newHierarchy is a root and an imported intermediate constrained by k.
func newHierarchy(t testing.TB, k Constraints) (root, inter *CA) {
	t.Helper()
	root, _ = newRoot(t, InitOptions{Settings: withCRLURL("http://pki.example.com/root.crl")})
	p := newPending(t, "Issuing 1", k)
	is := signInt(t, root, "int1", p, k)
	inter, err := ImportIntermediate(p.Dir, ImportOptions{Certs: []*x509.Certificate{is.Cert, root.Cert}, RootCRL: rootCRL(t, root), Now: fixedClock(hierNow)})
	if err != nil {
		t.Fatalf("ImportIntermediate: %v", err)
	}
	inter.Now = fixedClock(hierNow)
	t.Cleanup(func() { inter.Close() })
	return root, inter
}

func withCRLURL(u string) Settings {
	s := DefaultSettings()
	s.CRLURL = u
	s.OCSPURL = "http://ocsp.example.com/"
	return s
}

func TestInitRoot(t *testing.T) {
	root, _ := newRoot(t, InitOptions{})
	c := root.Cert
	if !c.IsCA || c.MaxPathLen != DefaultRootPathLen || c.MaxPathLenZero || c.KeyUsage != x509.KeyUsageCertSign|x509.KeyUsageCRLSign {
		t.Errorf("root: IsCA %v pathLen %d zero %v ku %v; want CA:TRUE pathLen 1 keyCertSign|cRLSign", c.IsCA, c.MaxPathLen, c.MaxPathLenZero, c.KeyUsage)
	}
	if got, want := c.NotAfter.Sub(c.NotBefore), DefaultRootValidity+Backdate; got != want {
		t.Errorf("root validity = %v; want %v", got, want)
	}
	if !root.IsRoot() || root.Settings.CRLLifetime != Duration(DefaultRootCRLLifetime) {
		t.Errorf("settings = %+v; want role root, CRL lifetime 365d", root.Settings)
	}
	crl, err := root.LoadCRL()
	if err != nil {
		t.Fatal(err)
	}
	if got := crl.NextUpdate().Sub(crl.ThisUpdate()); got != DefaultRootCRLLifetime {
		t.Errorf("first root CRL lifetime = %v; want %v", got, DefaultRootCRLLifetime)
	}
	if _, err := root.Issue(signerOf(t, root), Request{Name: "alice", Profile: Client}); !errors.Is(err, ErrRootCA) {
		t.Errorf("Issue on a root: error = %v; want ErrRootCA", err)
	}
	if n := countRecords(t, root); n != 0 {
		t.Errorf("root has %d records after a refused issue; want 0", n)
	}
	root2, _ := newRoot(t, InitOptions{MaxPathLen: 2})
	if root2.Cert.MaxPathLen != 2 {
		t.Errorf("MaxPathLen 2: root pathLen = %d", root2.Cert.MaxPathLen)
	}
}

func TestSignIntermediateProfile(t *testing.T) {
	k := Constraints{PermittedDNS: []string{"example.com"}, PermittedEmails: []string{"example.com"},
		ExcludedDNS: []string{"secret.example.com"}, PermittedIPs: []*net.IPNet{mustCIDR(t, "10.0.0.0/8")}, ExcludedIPs: []*net.IPNet{mustCIDR(t, "10.9.0.0/16")}}
	root, _ := newRoot(t, InitOptions{Settings: withCRLURL("http://pki.example.com/root.crl")})
	p := newPending(t, "Issuing 1", k)
	is := signInt(t, root, "int1", p, k)
	c := is.Cert
	if !c.IsCA || c.MaxPathLen != 0 || !c.MaxPathLenZero || c.KeyUsage != x509.KeyUsageCertSign|x509.KeyUsageCRLSign {
		t.Errorf("intermediate: IsCA %v pathLen %d ku %v; want CA:TRUE pathLen 0 keyCertSign|cRLSign", c.IsCA, c.MaxPathLen, c.KeyUsage)
	}
	if !bytes.Equal(c.AuthorityKeyId, root.Cert.SubjectKeyId) || c.CheckSignatureFrom(root.Cert) != nil {
		t.Errorf("AKI %x, root SKI %x, or the signature does not verify", c.AuthorityKeyId, root.Cert.SubjectKeyId)
	}
	if strings.Join(c.CRLDistributionPoints, ",") != "http://pki.example.com/root.crl" || strings.Join(c.OCSPServer, ",") != "http://ocsp.example.com/" {
		t.Errorf("CRL DP %q, OCSP %q; want the root's", c.CRLDistributionPoints, c.OCSPServer)
	}
	if !c.PermittedDNSDomainsCritical || strings.Join(c.ExcludedDNSDomains, ",") != "secret.example.com" ||
		strings.Join(c.PermittedURIDomains, ",") != noNames || ipStrings(c.ExcludedIPRanges)[0] != "10.9.0.0/16" {
		t.Errorf("constraints: critical %v, excluded DNS %q, permitted URI %q, excluded IP %q", c.PermittedDNSDomainsCritical, c.ExcludedDNSDomains, c.PermittedURIDomains, c.ExcludedIPRanges)
	}
	if c.Subject.CommonName != "Issuing 1" {
		t.Errorf("subject CN = %q", c.Subject.CommonName)
	}
	rec := is.Record
	if rec.Profile != Intermediate || rec.Status != StatusValid || rec.Name != "int1" || rec.HasKey {
		t.Errorf("record = %+v; want a valid intermediate record without a key", rec)
	}
	chain, err := os.ReadFile(is.ChainFile)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := formats.ParseCertificates(chain)
	if err != nil || len(certs) != 2 || !certs[0].Equal(c) || !certs[1].Equal(root.Cert) {
		t.Errorf("chain file holds %d certificates (%v); want the intermediate and the root", len(certs), err)
	}
}

func mustCIDR(t testing.TB, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSignIntermediateRefuses(t *testing.T) {
	root, _ := newRoot(t, InitOptions{Validity: 3 * 365 * 24 * time.Hour})
	plain, plainSigner := newTestCA(t, InitOptions{Now: fixedClock(hierNow)})
	p := newPending(t, "Issuing 1", Constraints{})
	tests := []struct {
		name    string
		ca      *CA
		req     IntermediateRequest
		wantErr string
	}{
		{name: "not a root", ca: plain, req: IntermediateRequest{Name: "i", CSR: p.CSR}, wantErr: "only a root CA signs intermediate CAs"},
		{name: "outlives the root", ca: root, req: IntermediateRequest{Name: "i", CSR: p.CSR, Validity: 5 * 365 * 24 * time.Hour},
			wantErr: "certificate would outlive the CA: validity 1825d would end on 2035-01-01T02:59:05Z, after the CA certificate expires on 2033-01-01T03:04:05Z"},
		{name: "bad name", ca: root, req: IntermediateRequest{Name: "../x", CSR: p.CSR}, wantErr: "name"},
		{name: "no CSR", ca: root, req: IntermediateRequest{Name: "i"}, wantErr: "a CSR is required"},
		{name: "wildcard constraint", ca: root, req: IntermediateRequest{Name: "i", CSR: p.CSR, Constraints: Constraints{ExcludedDNS: []string{"*.example.com"}}},
			wantErr: `excluded DNS domain "*.example.com": want a domain such as example.com, without a wildcard`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			signer := plainSigner
			if tt.ca == root {
				signer = signerOf(t, root)
			}
			_, err := tt.ca.SignIntermediate(signer, tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("SignIntermediate() error = %v; want containing %q", err, tt.wantErr)
			}
			if n := countRecords(t, tt.ca); n != 0 {
				t.Errorf("%d records after a refusal; want 0", n)
			}
		})
	}
}

func TestPendingRefusesUse(t *testing.T) {
	p := newPending(t, "Issuing 1", Constraints{PermittedDNS: []string{"example.com"}})
	if _, err := Open(p.Dir); !errors.Is(err, ErrPending) {
		t.Fatalf("Open(pending) error = %v; want ErrPending", err)
	}
	got, err := OpenPending(p.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if !publicKeysEqual(got.CSR.PublicKey, p.CSR.PublicKey) || strings.Join(got.Constraints.PermittedDNS, ",") != "example.com" || got.Key.Kind != KeyInFile {
		t.Errorf("OpenPending = %+v; want the CSR and constraints written", got)
	}
	if _, err := InitPending(p.Dir, InitOptions{CommonName: "again"}); !errors.Is(err, ErrUnfinished) {
		t.Errorf("InitPending over a pending one: error = %v; want ErrUnfinished", err)
	}
	if err := RemovePending(p.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("RemovePending left the directory: %v", err)
	}
}

// treeSum hashes every file name, mode and content under dir but the lock.
func treeSum(t testing.TB, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == lockFile {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h.Write([]byte(rel + " " + info.Mode().String() + "\n"))
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestImportIntermediateRefuses(t *testing.T) {
	k := Constraints{PermittedDNS: []string{"example.com"}}
	root, _ := newRoot(t, InitOptions{})
	other, _ := newRoot(t, InitOptions{CommonName: "Other Root"})
	p := newPending(t, "Issuing 1", k)
	p2 := newPending(t, "Issuing 2", Constraints{})
	good := signInt(t, root, "int1", p, k)
	otherKey := signInt(t, root, "int2", p2, Constraints{})
	open := signInt(t, root, "int1-open", p, Constraints{})
	excl := signInt(t, root, "int1-excl", p, Constraints{PermittedDNS: []string{"example.com"}, ExcludedDNS: []string{"x.example.com"}})
	foreign := signInt(t, other, "int1", p, k)
	revoked := signInt(t, root, "int1-revoked", p, k)
	if _, err := root.RevokeRecord(revoked.Record, revoke.CACompromise); err != nil {
		t.Fatal(err)
	}
	crl := rootCRL(t, root)
	otherCRL := rootCRL(t, other)
	tests := []struct {
		name    string
		o       ImportOptions
		wantErr string
	}{
		{name: "another key", o: ImportOptions{Certs: []*x509.Certificate{otherKey.Cert, root.Cert}, RootCRL: crl},
			wantErr: `certifies another key than the pending intermediate's (intermediate.csr)`},
		{name: "no constraints", o: ImportOptions{Certs: []*x509.Certificate{open.Cert, root.Cert}, RootCRL: crl},
			wantErr: `the certificate "CN=Issuing 1" does not carry the name constraints asked for: its permitted DNS domains are [], but [example.com] were asked for`},
		{name: "more constraints", o: ImportOptions{Certs: []*x509.Certificate{excl.Cert, root.Cert}, RootCRL: crl},
			wantErr: `its excluded DNS domains are [x.example.com], but [] were asked for`},
		{name: "another root", o: ImportOptions{Certs: []*x509.Certificate{foreign.Cert}, Root: root.Cert, RootCRL: crl},
			wantErr: `the certificate "CN=Issuing 1" (issued by "CN=Other Root") does not chain to the root "CN=Test Root"`},
		{name: "root differs", o: ImportOptions{Certs: []*x509.Certificate{foreign.Cert, other.Cert}, Root: root.Cert, RootCRL: crl},
			wantErr: `the certificate file's root "CN=Other Root" is not the root certificate given ("CN=Test Root")`},
		{name: "no root", o: ImportOptions{Certs: []*x509.Certificate{good.Cert}, RootCRL: crl}, wantErr: "no root certificate"},
		{name: "root not self-signed", o: ImportOptions{Certs: []*x509.Certificate{good.Cert, otherKey.Cert}, RootCRL: crl},
			wantErr: `the root certificate "CN=Issuing 2" is not a self-signed CA certificate`},
		{name: "CRL of another root", o: ImportOptions{Certs: []*x509.Certificate{good.Cert, root.Cert}, RootCRL: otherCRL},
			wantErr: `the root CRL is not one of root "CN=Test Root"`},
		{name: "revoked", o: ImportOptions{Certs: []*x509.Certificate{revoked.Cert, root.Cert}, RootCRL: crl}, wantErr: "as revoked"},
		{name: "expired", o: ImportOptions{Certs: []*x509.Certificate{good.Cert, root.Cert}, RootCRL: crl, Now: fixedClock(hierNow.AddDate(3, 0, 0))},
			wantErr: "is valid from 2030-01-02T02:59:05Z to 2032-01-02T02:59:05Z, not now (2033-01-02T03:04:05Z)"},
		{name: "no certificate", o: ImportOptions{RootCRL: crl}, wantErr: "got 0 certificates"},
		{name: "a leaf", o: ImportOptions{Certs: []*x509.Certificate{good.Cert, root.Cert}, RootCRL: []byte("junk")}, wantErr: "the root CRL is not one of root"},
	}
	before := treeSum(t, p.Dir)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.o.Now == nil {
				tt.o.Now = fixedClock(hierNow)
			}
			c, err := ImportIntermediate(p.Dir, tt.o)
			if err == nil {
				c.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ImportIntermediate() error = %v; want containing %q", err, tt.wantErr)
			}
			if got := treeSum(t, p.Dir); got != before {
				t.Errorf("the pending directory changed")
			}
			if _, err := Open(p.Dir); !errors.Is(err, ErrPending) {
				t.Errorf("after a refused import Open() error = %v; want ErrPending", err)
			}
		})
	}
}

func TestImportIntermediateWrongPassword(t *testing.T) {
	root, _ := newRoot(t, InitOptions{})
	p, err := InitPending(filepath.Join(t.TempDir(), "int"), InitOptions{CommonName: "Issuing 1", Password: []byte("right")})
	if err != nil {
		t.Fatal(err)
	}
	if p.Key.Kind != KeyInEncryptedFile {
		t.Errorf("Key.Kind = %v for a key with a password; want KeyInEncryptedFile", p.Key.Kind)
	}
	if got, err := OpenPending(p.Dir); err != nil {
		t.Fatal(err)
	} else if got.Key.Kind != KeyInEncryptedFile {
		t.Errorf("OpenPending: Key.Kind = %v; want KeyInEncryptedFile", got.Key.Kind)
	}
	is := signInt(t, root, "int1", p, Constraints{})
	o := ImportOptions{Certs: []*x509.Certificate{is.Cert, root.Cert}, RootCRL: rootCRL(t, root), Now: fixedClock(hierNow), Secret: FixedSecret([]byte("wrong"))}
	before := treeSum(t, p.Dir)
	if _, err := ImportIntermediate(p.Dir, o); !errors.Is(err, formats.ErrWrongPassword) {
		t.Fatalf("error = %v; want ErrWrongPassword", err)
	}
	if treeSum(t, p.Dir) != before {
		t.Error("a wrong password changed the directory")
	}
	o.Secret = FixedSecret([]byte("right"))
	c, err := ImportIntermediate(p.Dir, o)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestIssueUnderIntermediate(t *testing.T) {
	root, inter := newHierarchy(t, Constraints{PermittedDNS: []string{"example.com"}, PermittedEmails: []string{"example.com"}})
	if !inter.IsIntermediate() || !inter.Root().Equal(root.Cert) || len(inter.Chain) != 2 {
		t.Fatalf("intermediate: role %q, chain of %d", inter.Settings.Role, len(inter.Chain))
	}
	// Reopened from disk, the same.
	again, err := Open(inter.dir.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if !again.IsIntermediate() || !again.Root().Equal(root.Cert) {
		t.Fatal("reopened intermediate lost its role or root")
	}
	signer := signerOf(t, inter)
	is, err := inter.Issue(signer, Request{Name: "alice", Profile: Client, Emails: []string{"alice@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	chain, err := os.ReadFile(is.ChainFile)
	if err != nil {
		t.Fatal(err)
	}
	certs, _ := formats.ParseCertificates(chain)
	if len(certs) != 2 || !certs[1].Equal(inter.Cert) {
		t.Errorf("leaf chain holds %d certificates; want the leaf and the intermediate, without the root", len(certs))
	}
	leaf, err := inter.LoadLeaf(is.Record)
	if err != nil {
		t.Fatal(err)
	}
	if len(leaf.Chain) != 2 || !leaf.Chain[1].Equal(root.Cert) {
		t.Errorf("LoadLeaf chain holds %d certificates; want the intermediate and the root (for a .p12)", len(leaf.Chain))
	}
	pool := x509.NewCertPool()
	pool.AddCert(root.Cert)
	inters := x509.NewCertPool()
	inters.AddCert(inter.Cert)
	if _, err := is.Cert.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inters, CurrentTime: hierNow, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("Go refuses the leaf: %v", err)
	}
	_, err = inter.Issue(signer, Request{Name: "eve", Profile: Client, Emails: []string{"eve@example.org"}})
	if want := `email "eve@example.org" is outside the CA's permitted email domains (example.com)`; err == nil || err.Error() != want {
		t.Errorf("Issue(eve@example.org) error = %v; want %q", err, want)
	}
}

func TestImportRootCRL(t *testing.T) {
	root, inter := newHierarchy(t, Constraints{})
	other, _ := newRoot(t, InitOptions{CommonName: "Other"})
	held, err := inter.LoadRootCRL()
	if err != nil {
		t.Fatal(err)
	}
	older, err := root.dir.ReadFile(CRLPEMFile)
	if err != nil {
		t.Fatal(err)
	}
	root.Now = fixedClock(hierNow.Add(time.Hour))
	newer := rootCRL(t, root)
	// Brought to the intermediate once the root signed it.
	inter.Now = fixedClock(hierNow.Add(time.Hour))
	if _, err := inter.ImportRootCRL(rootCRL(t, other)); err == nil || !strings.Contains(err.Error(), `the CRL is not one of the root "CN=Test Root"`) {
		t.Errorf("foreign CRL: error = %v", err)
	}
	got, err := inter.ImportRootCRL(newer)
	if err != nil || got.Number().Cmp(held.Number()) <= 0 {
		t.Fatalf("newer CRL: %v, number %v (held %v)", err, got, held.Number())
	}
	if _, err := inter.ImportRootCRL(older); !errors.Is(err, ErrOlderCRL) {
		t.Errorf("older CRL: error = %v; want ErrOlderCRL", err)
	}
	if _, err := inter.ImportRootCRL(newer); err != nil {
		t.Errorf("the same CRL again: %v", err)
	}
	pemData, _ := inter.dir.ReadFile(RootCRLPEMFile)
	der, _ := inter.dir.ReadFile(RootCRLDERFile)
	if !bytes.Equal(der, newer) || !bytes.Contains(pemData, []byte("BEGIN X509 CRL")) {
		t.Error("root-crl.der is not the CRL imported, or root-crl.pem is not PEM")
	}
	if _, err := root.ImportRootCRL(newer); err == nil {
		t.Error("ImportRootCRL on a root: no error")
	}
	// revoke.MayReplace refuses a CRL signed by a clock ahead of the
	// intermediate's, and an expired one over the current one, whatever
	// their numbers; root-crl.der stays.
	root.Now = fixedClock(hierNow.Add(3 * time.Hour))
	if _, err := inter.ImportRootCRL(rootCRL(t, root)); !errors.Is(err, revoke.ErrNotYetValid) {
		t.Errorf("CRL from the future: error = %v; want ErrNotYetValid", err)
	}
	root.Now = fixedClock(hierNow.Add(-2 * DefaultRootCRLLifetime))
	if _, err := inter.ImportRootCRL(rootCRL(t, root)); !errors.Is(err, revoke.ErrExpired) {
		t.Errorf("expired CRL: error = %v; want ErrExpired", err)
	}
	if der, _ := inter.dir.ReadFile(RootCRLDERFile); !bytes.Equal(der, newer) {
		t.Error("a refused CRL replaced root-crl.der")
	}
}

func TestSetNameConstraintsExclusions(t *testing.T) {
	tests := []struct {
		name string
		k    Constraints
		want string
	}{
		{name: "none", k: Constraints{}, want: "none"},
		{name: "excluded only", k: Constraints{ExcludedDNS: []string{"evil.com"}, ExcludedIPs: []*net.IPNet{mustCIDR(t, "192.168.0.0/16")}},
			want: "critical permit= exclude=dns:evil.com,ip:192.168.0.0/16"},
		{name: "permit and exclude", k: Constraints{PermittedEmails: []string{".example.com"}, ExcludedEmails: []string{"ceo@x.example.com"}},
			want: "critical permit=dns:none.invalid,email:.example.com,uri:none.invalid exclude=dns:none.invalid,email:ceo@x.example.com,uri:none.invalid,ip:0.0.0.0/0,ip:::/0"},
		{name: "exclusion of a type not permitted is dropped", k: Constraints{PermittedDNS: []string{"example.com"}, ExcludedEmails: []string{"a@b.com"}},
			want: "critical permit=dns:example.com,email:none.invalid,uri:none.invalid exclude=email:none.invalid,uri:none.invalid,ip:0.0.0.0/0,ip:::/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c x509.Certificate
			setNameConstraints(&c, tt.k)
			if got := ncString(&c); got != tt.want {
				t.Errorf("got %q; want %q", got, tt.want)
			}
			if err := checkCarries(&c, tt.k); err != nil {
				t.Errorf("checkCarries of its own result: %v", err)
			}
		})
	}
}

func ncString(c *x509.Certificate) string {
	var permit, exclude []string
	for _, s := range c.PermittedDNSDomains {
		permit = append(permit, "dns:"+s)
	}
	for _, s := range c.PermittedEmailAddresses {
		permit = append(permit, "email:"+s)
	}
	for _, s := range c.PermittedURIDomains {
		permit = append(permit, "uri:"+s)
	}
	for _, s := range ipStrings(c.PermittedIPRanges) {
		permit = append(permit, "ip:"+s)
	}
	for _, s := range c.ExcludedDNSDomains {
		exclude = append(exclude, "dns:"+s)
	}
	for _, s := range c.ExcludedEmailAddresses {
		exclude = append(exclude, "email:"+s)
	}
	for _, s := range c.ExcludedURIDomains {
		exclude = append(exclude, "uri:"+s)
	}
	for _, s := range ipStrings(c.ExcludedIPRanges) {
		exclude = append(exclude, "ip:"+s)
	}
	if len(permit)+len(exclude) == 0 {
		return "none"
	}
	return "critical permit=" + strings.Join(permit, ",") + " exclude=" + strings.Join(exclude, ",")
}

// The certificates and CRLs of a hierarchy pass zlint: the root, an
// intermediate with and without constraints, a leaf under it, both CRLs.
func TestHierarchyLint(t *testing.T) {
	for _, k := range []Constraints{{}, {PermittedDNS: []string{"example.com"}, PermittedEmails: []string{"example.com"}, ExcludedDNS: []string{"x.example.com"}, ExcludedIPs: []*net.IPNet{mustCIDR(t, "10.0.0.0/8")}}} {
		root, inter := newHierarchy(t, k)
		certlint.Certificate(t, root.Cert.Raw)
		certlint.Certificate(t, inter.Cert.Raw)
		is, err := inter.Issue(signerOf(t, inter), Request{Name: "www.example.com", Profile: Server, Validity: 90 * 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		certlint.Certificate(t, is.Cert.Raw)
		for _, c := range []*CA{root, inter} {
			der, err := c.dir.ReadFile(CRLDERFile)
			if err != nil {
				t.Fatal(err)
			}
			certlint.RevocationList(t, der)
		}
	}
}

func TestOpenRefusesForeignRoot(t *testing.T) {
	_, inter := newHierarchy(t, Constraints{})
	other, _ := newRoot(t, InitOptions{CommonName: "Other"})
	if err := os.WriteFile(inter.Path(RootCertFile), pemCert(other.Cert), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(inter.dir.Path()); err == nil || !strings.Contains(err.Error(), "its root is not the one of root.crt") {
		t.Errorf("Open() with another root.crt: error = %v", err)
	}
	chain := append(pemCert(inter.Cert), pemCert(other.Cert)...)
	if err := os.WriteFile(inter.Path(chainFile), chain, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(inter.dir.Path()); err == nil || !strings.Contains(err.Error(), "the second certificate did not sign the CA certificate") {
		t.Errorf("Open() with another root in chain.pem: error = %v", err)
	}
}

// A directory without a pending intermediate is no CA, and says why.
func TestOpenPendingNone(t *testing.T) {
	c, _ := newTestCA(t, InitOptions{})
	if err := os.Remove(c.Path(certFile)); err != nil {
		t.Fatal(err)
	}
	_, err := OpenPending(c.Path("."))
	if !errors.Is(err, ErrNoCA) || !errors.Is(err, ErrNoPending) || !strings.Contains(err.Error(), "no pending intermediate (intermediate.csr)") {
		t.Fatalf("OpenPending() error = %v; want ErrNoCA and ErrNoPending", err)
	}
}
