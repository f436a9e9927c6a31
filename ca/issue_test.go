package ca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestIssueValidity(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Validity: 2 * 365 * 24 * time.Hour, Now: fixedClock(start)})
	c.Now = fixedClock(start.Add(time.Hour))
	is, err := c.Issue(signer, Request{Name: "simon", Profile: Client})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := is.Cert.NotBefore, start.Add(time.Hour-Backdate); !got.Equal(want) {
		t.Errorf("NotBefore = %v; want %v", got, want)
	}
	if got, want := is.Cert.NotAfter, start.Add(time.Hour-Backdate+DefaultClientValidity); !got.Equal(want) {
		t.Errorf("NotAfter = %v; want %v", got, want)
	}

	tests := []struct {
		name    string
		now     time.Time
		req     Request
		wantErr string
	}{
		{"server default outlives CA", start.Add(400 * 24 * time.Hour), Request{Name: "web", Profile: Server},
			"certificate would outlive the CA: validity 825d would end on 2033-05-11T02:59:05Z, after the CA certificate expires on 2032-01-02T03:04:05Z"},
		{"explicit validity outlives CA", start, Request{Name: "c", Profile: Client, Validity: 3 * 365 * 24 * time.Hour},
			"certificate would outlive the CA"},
		{"clock before CA", start.Add(-time.Hour), Request{Name: "c", Profile: Client},
			"the system clock (2030-01-02T02:04:05Z) is before the CA's notBefore (2030-01-02T02:59:05Z): check the clock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.Now = fixedClock(tt.now)
			_, err := c.Issue(signer, tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Issue() error = %v; want containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestIssueBackdateNotBeforeCA(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Now: fixedClock(start)})
	c.Now = fixedClock(start)
	is, err := c.Issue(signer, Request{Name: "early", Profile: Client})
	if err != nil {
		t.Fatal(err)
	}
	if !is.Cert.NotBefore.Equal(c.Cert.NotBefore) {
		t.Errorf("NotBefore = %v; want the CA's %v", is.Cert.NotBefore, c.Cert.NotBefore)
	}
}

func TestIssueNameTaken(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	first, err := c.Issue(signer, Request{Name: "simon", Profile: Client})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Issue(signer, Request{Name: "simon", Profile: Client})
	var taken *NameTakenError
	if !errors.As(err, &taken) || taken.Serial != first.Record.Serial || !errors.Is(err, ErrNameTaken) {
		t.Fatalf("second Issue() error = %v; want NameTakenError naming %s", err, first.Record.Serial)
	}
	if _, err := c.Issue(signer, Request{Name: "simon", Profile: Client, Force: true}); err != nil {
		t.Fatalf("Issue(Force) = %v", err)
	}
	recs, err := c.RecordsByName("simon")
	if err != nil || len(recs) != 2 {
		t.Fatalf("RecordsByName = %d records, %v; want 2", len(recs), err)
	}
	// An expired certificate frees its name.
	c.Now = fixedClock(time.Now().Add(DefaultClientValidity + 24*time.Hour))
	if _, err := c.Issue(signer, Request{Name: "simon", Profile: Client, Validity: time.Hour}); err != nil {
		t.Fatalf("Issue after expiry = %v", err)
	}
	// A revoked one too.
	rec := first.Record
	rec.Status, rec.RevokedAt, rec.Reason = StatusRevoked, time.Now(), "keyCompromise"
	if err := c.putRecord(rec); err != nil {
		t.Fatal(err)
	}
}

func TestIssueServerSANs(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	is, err := c.Issue(signer, Request{Name: "web1.example.com", Profile: Server})
	if err != nil {
		t.Fatal(err)
	}
	if len(is.Cert.DNSNames) != 1 || is.Cert.DNSNames[0] != "web1.example.com" || is.Cert.Subject.CommonName != "web1.example.com" {
		t.Errorf("DNS SANs = %v, CN = %q; want the name", is.Cert.DNSNames, is.Cert.Subject.CommonName)
	}
	is, err = c.Issue(signer, Request{Name: "db", Profile: Server, IPs: []net.IP{net.ParseIP("10.0.0.5")}})
	if err != nil || len(is.Cert.DNSNames) != 0 || !is.Cert.IPAddresses[0].Equal(net.ParseIP("10.0.0.5")) {
		t.Errorf("IP-only server: %v, DNS %v", err, is.Cert.DNSNames)
	}
	_, err = c.Issue(signer, Request{Name: "10.0.0.6", Profile: Server})
	if err == nil || !strings.Contains(err.Error(), "needs at least one DNS name or IP address") {
		t.Errorf("server without SAN: %v", err)
	}
}

func TestIssueNameConstraints(t *testing.T) {
	_, ipnet, _ := net.ParseCIDR("10.0.0.0/8")
	c, signer := newTestCA(t, InitOptions{
		PermittedDNS: []string{"acme.internal"}, PermittedEmails: []string{"acme.com"}, PermittedIPs: []*net.IPNet{ipnet},
	})
	ok := []Request{
		{Name: "web.acme.internal", Profile: Server},
		{Name: "db", Profile: Server, IPs: []net.IP{net.ParseIP("10.1.2.3")}},
		{Name: "simon", Profile: Client, Emails: []string{"simon@acme.com"}},
	}
	for _, r := range ok {
		if _, err := c.Issue(signer, r); err != nil {
			t.Errorf("Issue(%s) = %v", r.Name, err)
		}
	}
	bad := []struct {
		req     Request
		wantErr string
	}{
		{Request{Name: "web.evil.com", Profile: Server}, `DNS name "web.evil.com" is outside the CA's permitted DNS domains (acme.internal)`},
		{Request{Name: "db2", Profile: Server, IPs: []net.IP{net.ParseIP("192.168.1.1")}}, "IP address 192.168.1.1 is outside"},
		{Request{Name: "eve", Profile: Client, Emails: []string{"eve@evil.com"}}, `email "eve@evil.com" is outside`},
	}
	for _, b := range bad {
		_, err := c.Issue(signer, b.req)
		if err == nil || !strings.Contains(err.Error(), b.wantErr) {
			t.Errorf("Issue(%s) = %v; want containing %q", b.req.Name, err, b.wantErr)
		}
	}
	// A refused request leaves nothing behind, not even a voided serial.
	n := 0
	for _, err := range c.Records() {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != len(ok) {
		t.Errorf("%d records after %d issued and %d refused; want %d", n, len(ok), len(bad), len(ok))
	}
}

// failingSigner is a CA key whose signatures fail.
type failingSigner struct{ crypto.Signer }

func (failingSigner) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	return nil, errors.New("the key is unavailable")
}

// A failure after the serial is reserved voids it and removes the key that
// was written meanwhile.
func TestIssueSigningFails(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	_, err := c.Issue(failingSigner{signer}, Request{Name: "simon", Profile: Client})
	if err == nil || !strings.Contains(err.Error(), "the key is unavailable") {
		t.Fatalf("Issue with a failing signer = %v; want the signer's error", err)
	}
	recs, err := c.RecordsByName("simon")
	if err != nil {
		t.Fatal(err)
	}
	var statuses []Status
	for r, err := range c.Records() {
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, r.Status)
	}
	if len(recs) != 0 || len(statuses) != 1 || statuses[0] != StatusVoid {
		t.Errorf("after a failed signature: %d certificates under the name, record statuses %v; want none and [void]", len(recs), statuses)
	}
	entries, err := os.ReadDir(c.Path("certs/simon"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("certs/simon holds %d files after a failed signature; want none", len(entries))
	}
}

func TestIssuePublicKey(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	is, err := c.Issue(signer, Request{Name: "csr", Profile: Client, PublicKey: key.Public()})
	if err != nil {
		t.Fatal(err)
	}
	if is.Key != nil || is.KeyFile != "" || is.Record.HasKey {
		t.Error("a CSR-signed certificate must not have a stored key")
	}
	weak, _ := rsa.GenerateKey(rand.Reader, 1024)
	_, err = c.Issue(signer, Request{Name: "weak", Profile: Client, PublicKey: weak.Public()})
	if err == nil || err.Error() != "weak key: RSA 1024 bits, at least 2048 required" {
		t.Errorf("weak key: %v", err)
	}
	p224, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	_, err = c.Issue(signer, Request{Name: "p224", Profile: Client, PublicKey: p224.Public()})
	if err == nil || err.Error() != "weak key: ECDSA curve P-224, want P-256 or P-384" {
		t.Errorf("P-224 key: %v", err)
	}
}

func TestFilesAndModes(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	is, err := c.Issue(signer, Request{Name: "simon", Profile: Client})
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]os.FileMode{
		c.Path("."): 0o700, c.Path("ca.key"): 0o600, c.Path("ca.crt"): 0o644,
		is.KeyFile: 0o600, is.CertFile: 0o644, is.ChainFile: 0o644,
	} {
		info, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s mode = %04o; want %04o", file, got, want)
		}
	}
	chain, _ := os.ReadFile(is.ChainFile)
	if strings.Count(string(chain), "BEGIN CERTIFICATE") != 2 {
		t.Error("chain file must hold the leaf and the CA")
	}
}

func TestOpenRefusesBadState(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(c *CA)
		wantErr string
	}{
		{"truncated CA certificate", func(c *CA) { truncate(t, c.Path("ca.crt")) }, "corrupt CA certificate"},
		{"garbage settings", func(c *CA) { os.WriteFile(c.Path("settings.json"), []byte("{"), 0o644) }, "corrupt CA settings"},
		{"missing chain", func(c *CA) { os.Remove(c.Path("chain.pem")) }, "reading CA chain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestCA(t, InitOptions{})
			tt.mutate(c)
			_, err := Open(c.Path("."))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Open() = %v; want containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoadSignerRefusesBadKey(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(c *CA)
		wantErr string
	}{
		{"group-readable key", func(c *CA) { os.Chmod(c.Path("ca.key"), 0o640) }, "has mode 0640: group and others must have no access"},
		{"truncated key", func(c *CA) { truncate(t, c.Path("ca.key")) }, "corrupt CA key"},
		{"other CA's key", func(c *CA) {
			other, _ := newTestCA(t, InitOptions{})
			data, _ := os.ReadFile(other.Path("ca.key"))
			os.WriteFile(c.Path("ca.key"), data, 0o600)
		}, "does not match the CA certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestCA(t, InitOptions{})
			tt.mutate(c)
			_, err := c.LoadSigner(nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("LoadSigner() = %v; want containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestInitNeverOverwrites(t *testing.T) {
	c, _ := newTestCA(t, InitOptions{})
	before, _ := os.ReadFile(c.Path("ca.key"))
	_, err := Init(c.Path("."), InitOptions{CommonName: "Again"})
	if !errors.Is(err, ErrExists) {
		t.Fatalf("Init over a CA = %v; want ErrExists", err)
	}
	os.Remove(c.Path("ca.crt"))
	if _, err := Init(c.Path("."), InitOptions{CommonName: "Again"}); !errors.Is(err, ErrUnfinished) || errors.Is(err, ErrExists) {
		t.Fatalf("Init over a CA key without ca.crt = %v; want ErrUnfinished", err)
	}
	after, _ := os.ReadFile(c.Path("ca.key"))
	if string(before) != string(after) {
		t.Fatal("Init changed the existing key")
	}
	dir := t.TempDir()
	os.WriteFile(dir+"/other", nil, 0o600)
	if _, err := Init(dir, InitOptions{CommonName: "X"}); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Fatalf("Init in a non-empty directory = %v", err)
	}
}

func truncate(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
}

// A certificate directory that is not a directory fails the issuance with
// an error naming it, before anything is written.
func TestIssueCertDirUnusable(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	if err := os.WriteFile(c.Path("certs/simon"), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := c.Issue(signer, Request{Name: "simon", Profile: Client})
	if err == nil || !strings.Contains(err.Error(), c.Path("certs/simon")) || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Issue with certs/simon a file = %v; want an error naming it", err)
	}
	for r, err := range c.Records() {
		t.Errorf("record %v (%v) after a refused issuance; want none", r, err)
	}
	if data, _ := os.ReadFile(c.Path("certs/simon")); string(data) != "not a directory" {
		t.Errorf("certs/simon = %q; want it untouched", data)
	}
}
