package ca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"minica/revoke"
)

func dnsID(v string) ACMEIdentifier { return ACMEIdentifier{Type: "dns", Value: v} }
func ipID(v string) ACMEIdentifier  { return ACMEIdentifier{Type: "ip", Value: v} }

func TestCreateACMEBinding(t *testing.T) {
	c, _ := newEnrollCA(t)
	b, err := c.CreateACMEBinding("web-fleet", ACMEPolicy{DNSSuffixes: []string{".SVC.Example.com."}})
	if err != nil {
		t.Fatalf("CreateACMEBinding() error = %v", err)
	}
	if raw, err := base64.RawURLEncoding.Strict().DecodeString(b.KeyID); err != nil || len(raw) != 16 {
		t.Errorf("key ID %q: want 16 bytes in base64url (%v)", b.KeyID, err)
	}
	if len(b.HMACKey) != 32 {
		t.Errorf("HMAC key of %d bytes; want 32", len(b.HMACKey))
	}
	want := ACMEPolicy{DNSSuffixes: []string{"svc.example.com"}, Lifetime: DefaultACMELifetime,
		OrdersPerHour: DefaultACMEOrdersPerHour, PendingAuthz: DefaultACMEPendingAuthz, MaxAccounts: DefaultACMEAccounts}
	if b.Name != "web-fleet" || !b.Created.Equal(enrollStart) || b.Disabled || b.Bound() != 0 ||
		!slices.Equal(b.DNSSuffixes, want.DNSSuffixes) || b.Lifetime != want.Lifetime || b.OrdersPerHour != want.OrdersPerHour ||
		b.PendingAuthz != want.PendingAuthz || b.MaxAccounts != want.MaxAccounts {
		t.Errorf("binding = %+v; want the name, now, the suffix normalized and the defaults %+v", b, want)
	}

	byID, err := c.ACMEBinding(b.KeyID)
	if err != nil || byID.Name != "web-fleet" || string(byID.HMACKey) != string(b.HMACKey) {
		t.Errorf("ACMEBinding(key ID) = %+v, %v; want the binding", byID, err)
	}
	byName, err := c.ACMEBindingByName("web-fleet")
	if err != nil || byName.KeyID != b.KeyID {
		t.Errorf("ACMEBindingByName() = %+v, %v; want the binding", byName, err)
	}
	for _, id := range []string{"nope", "", "../x", strings.Repeat("a", 200)} {
		if _, err := c.ACMEBinding(id); !errors.Is(err, ErrACMEBindingUnknown) {
			t.Errorf("ACMEBinding(%q) error = %v; want ErrACMEBindingUnknown", id, err)
		}
	}
	if _, err := c.ACMEBindingByName("nobody"); !errors.Is(err, ErrACMEBindingUnknown) {
		t.Errorf("ACMEBindingByName(nobody) error = %v; want ErrACMEBindingUnknown", err)
	}

	// A taken name is refused, and writes nothing.
	if _, err := c.CreateACMEBinding("web-fleet", ACMEPolicy{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second CreateACMEBinding(web-fleet) error = %v; want fs.ErrExist", err)
	}
	other, err := c.CreateACMEBinding("ops", ACMEPolicy{IPRanges: []netip.Prefix{netip.MustParsePrefix("10.1.2.3/16")}, Client: true, MaxAccounts: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := other.IPRanges[0].String(); got != "10.1.0.0/16" || !other.Client || other.MaxAccounts != 3 {
		t.Errorf("binding ops = %+v; want its range masked, Client, 3 accounts", other)
	}
	var names []string
	for b, err := range c.ACMEBindings() {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, b.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"ops", "web-fleet"}) {
		t.Errorf("ACMEBindings() = %v; want ops and web-fleet", names)
	}

	// Disabled: kept, marked, and disabling again changes nothing.
	d, err := c.DisableACMEBinding("web-fleet")
	if err != nil || !d.Disabled {
		t.Fatalf("DisableACMEBinding() = %+v, %v", d, err)
	}
	if got, _ := c.ACMEBinding(b.KeyID); got == nil || !got.Disabled {
		t.Errorf("binding after disable = %+v; want disabled", got)
	}
	if _, err := c.DisableACMEBinding("web-fleet"); err != nil {
		t.Errorf("second DisableACMEBinding() error = %v", err)
	}
	if _, err := c.DisableACMEBinding("nobody"); !errors.Is(err, ErrACMEBindingUnknown) {
		t.Errorf("DisableACMEBinding(nobody) error = %v; want ErrACMEBindingUnknown", err)
	}
}

func TestCreateACMEBindingRefusesBadInput(t *testing.T) {
	c, _ := newEnrollCA(t) // the CA certificate lives 10 years from enrollStart
	tests := []struct {
		name    string
		binding string
		p       ACMEPolicy
		wantErr string
	}{
		{"bad name", "a/b", ACMEPolicy{}, `invalid name "a/b"`},
		{"wildcard suffix", "x", ACMEPolicy{DNSSuffixes: []string{"*.example.com"}}, `invalid DNS suffix "*.example.com": want a domain such as svc.example.com, without a wildcard`},
		{"bad suffix", "x", ACMEPolicy{DNSSuffixes: []string{"exa mple.com"}}, `invalid DNS suffix: invalid DNS name "exa mple.com"`},
		{"bad DNS name", "x", ACMEPolicy{DNSNames: []string{"a..b"}}, `invalid DNS name "a..b"`},
		{"IP as a DNS name", "x", ACMEPolicy{DNSNames: []string{"10.0.0.1"}}, `is an IP address`},
		{"bad range", "x", ACMEPolicy{IPRanges: []netip.Prefix{{}}}, `invalid IP range`},
		{"negative orders", "x", ACMEPolicy{OrdersPerHour: -1}, `invalid number of orders per hour -1`},
		{"too short", "x", ACMEPolicy{Lifetime: time.Minute}, `validity too short: lifetime 1m: want at least 5m1s`},
		{"negative lifetime", "x", ACMEPolicy{Lifetime: -time.Hour}, `validity too short`},
		{"outlives the CA", "x", ACMEPolicy{Lifetime: 11 * 365 * 24 * time.Hour}, `certificate would outlive the CA`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.CreateACMEBinding(tt.binding, tt.p)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CreateACMEBinding() error = %v; want containing %q", err, tt.wantErr)
			}
		})
	}
	for b, err := range c.ACMEBindings() {
		t.Errorf("a refused binding was written: %+v, %v", b, err)
	}
	// The refused bindings claimed no name.
	if _, err := c.CreateACMEBinding("x", ACMEPolicy{}); err != nil {
		t.Errorf("CreateACMEBinding(x) after the refusals: %v", err)
	}
}

func TestCreateACMEBindingOnRoot(t *testing.T) {
	root, _ := newRoot(t, InitOptions{})
	if _, err := root.CreateACMEBinding("x", ACMEPolicy{}); !errors.Is(err, ErrRootCA) {
		t.Errorf("CreateACMEBinding on a root error = %v; want ErrRootCA", err)
	}
}

func TestACMEPolicyAllows(t *testing.T) {
	suffix := ACMEPolicy{DNSSuffixes: []string{"svc.example.com"}}
	names := ACMEPolicy{DNSNames: []string{"api.example.com", "*.static.example.com"}}
	ips := ACMEPolicy{IPRanges: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("2001:db8::/32")}}
	open := ACMEOpen()
	tests := []struct {
		name string
		p    ACMEPolicy
		id   ACMEIdentifier
		ok   bool
	}{
		{"under the suffix", suffix, dnsID("web.svc.example.com"), true},
		{"deep under the suffix", suffix, dnsID("a.b.svc.example.com"), true},
		{"case and trailing dot", suffix, dnsID("Web.SVC.example.com."), true},
		{"the suffix itself", suffix, dnsID("svc.example.com"), false},
		{"no label boundary", suffix, dnsID("evilsvc.example.com"), false},
		{"elsewhere", suffix, dnsID("web.example.org"), false},
		{"suffix as a tail of a label", suffix, dnsID("svc.example.com.evil.org"), false},
		{"wildcard under the suffix", suffix, dnsID("*.svc.example.com"), true},
		{"wildcard deeper", suffix, dnsID("*.a.svc.example.com"), true},
		{"wildcard above the suffix", suffix, dnsID("*.example.com"), false},
		{"IP with only DNS entries", suffix, ipID("10.1.2.3"), false},
		{"exact name", names, dnsID("api.example.com"), true},
		{"exact name, not its subdomain", names, dnsID("x.api.example.com"), false},
		{"listed wildcard", names, dnsID("*.static.example.com"), true},
		{"name a listed wildcard covers", names, dnsID("a.static.example.com"), false},
		{"IPv4 in range", ips, ipID("10.1.255.7"), true},
		{"IPv4 out of range", ips, ipID("10.2.0.1"), false},
		{"IPv6 in range", ips, ipID("2001:db8::5"), true},
		{"IPv6 out of range", ips, ipID("2001:db9::5"), false},
		{"IPv4-mapped", ips, ipID("::ffff:10.1.0.1"), true},
		{"DNS with only IP entries", ips, dnsID("a.example.com"), false},
		{"open: any name", open, dnsID("anything.example.net"), true},
		{"open: any IP", open, ipID("192.0.2.1"), true},
		{"open: no wildcard", open, dnsID("*.example.net"), false},
		{"malformed name", open, dnsID("a_b.example.com"), false},
		{"wildcard in the middle", open, dnsID("a.*.example.com"), false},
		{"wildcard of a TLD", suffix, dnsID("*.com"), false},
		{"IP as a DNS name", open, dnsID("10.0.0.1"), false},
		{"malformed IP", open, ipID("10.0.0.256"), false},
		{"IP with a zone", open, ipID("fe80::1%eth0"), false},
		{"CIDR as an IP", open, ipID("10.0.0.0/8"), false},
		{"unknown type", open, ACMEIdentifier{Type: "email", Value: "a@example.com"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Allows(tt.id)
			if (err == nil) != tt.ok {
				t.Fatalf("Allows(%v) = %v; want allowed %v", tt.id, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrACMEIdentifier) {
				t.Errorf("Allows(%v) error %v does not match ErrACMEIdentifier", tt.id, err)
			}
		})
	}
}

// TestBindACMEAccountKeepsTheBindingSmall: a binding of many accounts
// holds their count, not their IDs, so that reading it for each order
// costs the same at 200 accounts as at one.
func TestBindACMEAccountKeepsTheBindingSmall(t *testing.T) {
	c, _ := newEnrollCA(t)
	b, err := c.CreateACMEBinding("fleet", ACMEPolicy{MaxAccounts: 200})
	if err != nil {
		t.Fatal(err)
	}
	size := func() int {
		o, err := c.db.Object(kindBinding, b.KeyID)
		if err != nil {
			t.Fatal(err)
		}
		return len(o.Data)
	}
	empty := size()
	for i := range 200 {
		if _, err := c.BindACMEAccount(b.KeyID, fmt.Sprintf("acct%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := size(); got > empty+len(`"account_count":200,`) {
		t.Errorf("the binding of 200 accounts takes %d bytes, %d when it had none; want only the count added", got, empty)
	}
	if _, err := c.BindACMEAccount(b.KeyID, "acct200"); !errors.Is(err, ErrACMEBindingUsed) {
		t.Errorf("the 201st account: %v; want ErrACMEBindingUsed", err)
	}
	if m, err := c.ACMEBoundAccounts(); err != nil || len(m[b.KeyID]) != 200 || m[b.KeyID][0] != "acct000" {
		t.Errorf("ACMEBoundAccounts() lists %d accounts of the binding, %v; want 200 from acct000", len(m[b.KeyID]), err)
	}
}

// TestBindACMEAccountOfAnEarlierBinding: the account IDs a binding kept in
// itself before still count against its limit.
func TestBindACMEAccountOfAnEarlierBinding(t *testing.T) {
	c, _ := newEnrollCA(t)
	b, err := c.CreateACMEBinding("once", ACMEPolicy{MaxAccounts: 1})
	if err != nil {
		t.Fatal(err)
	}
	b.Accounts = []string{"old1"}
	if err := c.putBinding(b); err != nil {
		t.Fatal(err)
	}
	if _, err := c.BindACMEAccount(b.KeyID, "new1"); !errors.Is(err, ErrACMEBindingUsed) {
		t.Errorf("a new account on a one-time binding that bound old1 before: %v; want ErrACMEBindingUsed", err)
	}
	if _, err := c.BindACMEAccount(b.KeyID, "old1"); err != nil {
		t.Errorf("binding old1 again: %v", err)
	}
}

func TestBindACMEAccount(t *testing.T) {
	c, _ := newEnrollCA(t)
	b, err := c.CreateACMEBinding("one", ACMEPolicy{MaxAccounts: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.BindACMEAccount(b.KeyID, "acct1")
	if err != nil || got.Bound() != 1 {
		t.Fatalf("BindACMEAccount(acct1) = %+v, %v; want one account bound", got, err)
	}
	wantBound := func(want ...string) {
		t.Helper()
		if m, err := c.ACMEBoundAccounts(); err != nil || !slices.Equal(m[b.KeyID], want) {
			t.Errorf("ACMEBoundAccounts()[%s] = %v, %v; want %v", b.KeyID, m[b.KeyID], err, want)
		}
	}
	wantBound("acct1")
	if _, err := c.BindACMEAccount(b.KeyID, "acct1"); err != nil {
		t.Errorf("binding the same account again: %v", err)
	}
	if _, err := c.BindACMEAccount(b.KeyID, "acct2"); !errors.Is(err, ErrACMEBindingUsed) {
		t.Errorf("a second account error = %v; want ErrACMEBindingUsed", err)
	}
	if got, _ := c.ACMEBinding(b.KeyID); got.Bound() != 1 {
		t.Errorf("accounts bound after the refusal: %d; want 1", got.Bound())
	}
	wantBound("acct1")
	if _, err := c.BindACMEAccount("unknownkey", "acct3"); !errors.Is(err, ErrACMEBindingUnknown) {
		t.Errorf("unknown key ID error = %v; want ErrACMEBindingUnknown", err)
	}
	if _, err := c.DisableACMEBinding("one"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.BindACMEAccount(b.KeyID, "acct1"); !errors.Is(err, ErrACMEBindingDisabled) {
		t.Errorf("a disabled binding error = %v; want ErrACMEBindingDisabled", err)
	}
}

func TestCountACMEOrder(t *testing.T) {
	c, _ := newEnrollCA(t)
	at := time.Date(2030, 1, 2, 3, 10, 0, 0, time.UTC)
	for i := range 3 {
		if err := c.CountACMEOrder("key1", 3, at.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatalf("order %d: %v", i+1, err)
		}
	}
	if err := c.CountACMEOrder("key1", 3, at.Add(40*time.Minute)); !errors.Is(err, ErrACMERateLimited) {
		t.Errorf("fourth order in the hour error = %v; want ErrACMERateLimited", err)
	}
	// Another binding, and accounts without one, count apart.
	if err := c.CountACMEOrder("key2", 3, at); err != nil {
		t.Errorf("another binding's order: %v", err)
	}
	if err := c.CountACMEOrder("", 1, at); err != nil {
		t.Errorf("an open order: %v", err)
	}
	if err := c.CountACMEOrder("", 1, at); !errors.Is(err, ErrACMERateLimited) {
		t.Errorf("a second open order with limit 1 error = %v; want ErrACMERateLimited", err)
	}
	// The next clock hour starts at 0, and the past hours' counters go.
	if err := c.CountACMEOrder("key1", 3, at.Add(50*time.Minute)); err != nil {
		t.Errorf("an order in the next hour: %v", err)
	}
	var ids []string
	for o, err := range c.db.Objects(kindRate) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, o.ID)
	}
	if want := []string{"key1.2030010204"}; !slices.Equal(ids, want) {
		t.Errorf("counters = %v; want %v", ids, want)
	}
}

// newACMEHierarchy is an intermediate constrained to example.com and
// 10.0.0.0/8, under a root.
func newACMEHierarchy(t *testing.T) (root, inter *CA) {
	return newHierarchy(t, Constraints{PermittedDNS: []string{"example.com"}, PermittedIPs: []*net.IPNet{cidr(t, "10.0.0.0/8")},
		ExcludedDNS: []string{"secret.example.com"}})
}

func TestCheckACMEIdentifiersUnderConstraints(t *testing.T) {
	_, inter := newACMEHierarchy(t)
	open := ACMEOpen()
	suffix := ACMEPolicy{DNSSuffixes: []string{"svc.example.com"}}
	tests := []struct {
		name    string
		p       *ACMEPolicy
		ids     []ACMEIdentifier
		wantErr string
	}{
		{"within", &open, []ACMEIdentifier{dnsID("web.example.com"), ipID("10.0.0.1")}, ""},
		{"outside the DNS constraint", &open, []ACMEIdentifier{dnsID("web.example.com"), dnsID("web.example.org")}, `DNS name "web.example.org" is outside the CA's permitted DNS domains`},
		{"excluded", &open, []ACMEIdentifier{dnsID("a.secret.example.com")}, `is within the CA's excluded DNS domains`},
		{"outside the IP constraint", &open, []ACMEIdentifier{ipID("192.0.2.1")}, `IP address 192.0.2.1 is outside the CA's permitted IP ranges`},
		{"refused by the policy first", &suffix, []ACMEIdentifier{dnsID("web.example.com")}, `identifier not allowed: dns "web.example.com": not under svc.example.com`},
		{"malformed", &open, []ACMEIdentifier{dnsID("-x.example.com")}, `invalid DNS name`},
		{"none", &open, nil, `an order has 0 identifiers: want 1 to 100`},
		{"too many", &open, make([]ACMEIdentifier, 101), `an order has 101 identifiers`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := inter.CheckACMEIdentifiers(tt.p, tt.ids)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckACMEIdentifiers() = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrACMEIdentifier) {
				t.Fatalf("CheckACMEIdentifiers() = %v; want ErrACMEIdentifier containing %q", err, tt.wantErr)
			}
		})
	}
}

// acmeCSR is a CSR for key with the given CN, DNS names and IPs.
func acmeCSR(t *testing.T, key crypto.Signer, cn string, dns []string, ips ...string) *x509.CertificateRequest {
	t.Helper()
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}, DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	return newCSR(t, key, tmpl)
}

func TestIssueACME(t *testing.T) {
	c, signer := newEnrollCA(t)
	policy := ACMEPolicy{DNSSuffixes: []string{"svc.example.com"}, IPRanges: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Lifetime: 3 * 24 * time.Hour}
	order := ACMEOrder{Account: "acct-1", Identifiers: []ACMEIdentifier{dnsID("web.svc.example.com"), dnsID("www.svc.example.com"), ipID("10.0.0.7")}, Policy: policy}
	key := newKey(t)
	issued, err := c.IssueACME(signer, order, acmeCSR(t, key, "", []string{"www.svc.example.com", "WEB.svc.example.com"}, "10.0.0.7"))
	if err != nil {
		t.Fatalf("IssueACME() error = %v", err)
	}
	cert, rec := issued.Cert, issued.Record
	if want := []string{"dns:web.svc.example.com", "dns:www.svc.example.com", "ip:10.0.0.7"}; !slices.Equal(SANs(cert), want) {
		t.Errorf("SANs %v; want %v", SANs(cert), want)
	}
	if !key.PublicKey.Equal(cert.PublicKey) || rec.HasKey {
		t.Error("the certificate does not certify the CSR's key, or a key was kept")
	}
	if cert.Subject.CommonName != "web.svc.example.com" || rec.Name != "web.svc.example.com" || rec.Profile != Server {
		t.Errorf("CN %q, name %q, profile %s; want the first DNS name, server", cert.Subject.CommonName, rec.Name, rec.Profile)
	}
	if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("EKU %v; want serverAuth only", cert.ExtKeyUsage)
	}
	if got := cert.NotAfter.Sub(cert.NotBefore); got != 3*24*time.Hour {
		t.Errorf("lifetime %s; want the binding's 3d", got)
	}
	if rec.ACMEAccount != "acct-1" {
		t.Errorf("record account %q; want acct-1", rec.ACMEAccount)
	}
	if got, err := c.Record(cert.SerialNumber); err != nil || got.ACMEAccount != "acct-1" {
		t.Errorf("stored record = %+v, %v; want the account", got, err)
	}

	// A renewal: the same names while the first certificate is valid.
	renewed, err := c.IssueACME(signer, order, acmeCSR(t, newKey(t), "web.svc.example.com", []string{"web.svc.example.com", "www.svc.example.com"}, "10.0.0.7"))
	if err != nil {
		t.Fatalf("IssueACME() of a name with a valid certificate error = %v", err)
	}
	if renewed.Record.Name != rec.Name || renewed.Record.Serial == rec.Serial {
		t.Errorf("renewal record %+v; want the same name, a new serial", renewed.Record)
	}
	if recs, _ := c.RecordsByName(rec.Name); len(recs) != 2 {
		t.Errorf("%d records named %s; want 2, both valid", len(recs), rec.Name)
	}

	// Client: clientAuth too.
	client := order
	client.Policy.Client = true
	both, err := c.IssueACME(signer, client, acmeCSR(t, newKey(t), "", []string{"web.svc.example.com", "www.svc.example.com"}, "10.0.0.7"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}; !slices.Equal(both.Cert.ExtKeyUsage, want) {
		t.Errorf("EKU with Client %v; want %v", both.Cert.ExtKeyUsage, want)
	}
}

// TestIssueACMEMovesNoCurrentLinks: an ACME certificate makes no
// current.* links, leaves those of a certificate issued under the same
// name by Issue on it (Current names that one), and Check finds nothing
// to repair.
func TestIssueACMEMovesNoCurrentLinks(t *testing.T) {
	c, signer := newEnrollCA(t)
	order := ACMEOrder{Account: "acct-1", Identifiers: []ACMEIdentifier{dnsID("web.example.com")}, Policy: ACMEOpen()}
	acme, err := c.IssueACME(signer, order, acmeCSR(t, newKey(t), "", []string{"web.example.com"}))
	if err != nil {
		t.Fatal(err)
	}
	name := acme.Record.Name
	if cert, key, chain := readCurrent(t, c, name); cert != "" || key != "" || chain != "" {
		t.Errorf("current.* links of %s after an ACME certificate: want none", name)
	}
	if cur, err := c.Current(name); err != nil || cur != nil {
		t.Errorf("Current(%s) with ACME certificates only = %v, %v; want nil", name, cur, err)
	}
	issued, err := c.Issue(signer, Request{Name: name, Profile: Server, DNSNames: []string{"web.example.com"}, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	later, err := c.IssueACME(signer, order, acmeCSR(t, newKey(t), "", []string{"web.example.com"}))
	if err != nil {
		t.Fatal(err)
	}
	if cert, _, chain := readCurrent(t, c, name); cert != fileString(t, issued.CertFile) || chain != fileString(t, issued.ChainFile) {
		t.Errorf("current.crt/current.chain.pem are not those of serial %s, issued by Issue before ACME's %s", issued.Record.Serial, later.Record.Serial)
	}
	if cur, err := c.Current(name); err != nil || cur == nil || cur.Serial != issued.Record.Serial {
		t.Errorf("Current(%s) = %v, %v; want serial %s, not the newer ACME one", name, cur, err, issued.Record.Serial)
	}
	rep, err := c.Check()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Repaired) != 0 {
		t.Errorf("Check() repaired %q; want nothing", rep.Repaired)
	}
}

// TestIssueACMEBatch: the orders of a batch are issued as IssueACME
// issues each (two of the same name included), an order refused does not
// stop the others, every certificate returned is recorded valid with its
// account and has its files, and none moves a current.* link.
func TestIssueACMEBatch(t *testing.T) {
	c, signer := newEnrollCA(t)
	order := func(name string) ACMEOrder {
		return ACMEOrder{Account: "acct-" + name, Identifiers: []ACMEIdentifier{dnsID(name)}, Policy: ACMEOpen()}
	}
	fins := []ACMEFinalize{
		{order("a.example.com"), acmeCSR(t, newKey(t), "", []string{"a.example.com"})},
		{order("a.example.com"), acmeCSR(t, newKey(t), "", []string{"other.example.com"})},
		{order("a.example.com"), acmeCSR(t, newKey(t), "a.example.com", nil)},
		{order("b.example.com"), acmeCSR(t, newKey(t), "", []string{"b.example.com"})},
	}
	issued, errs := c.IssueACMEBatch(signer, fins)
	if !errors.Is(errs[1], ErrACMECSR) || issued[1] != nil {
		t.Errorf("order 1 (a CSR for another name) = %v, %v; want ErrACMECSR", issued[1], errs[1])
	}
	for _, i := range []int{0, 2, 3} {
		if errs[i] != nil {
			t.Fatalf("order %d: %v", i, errs[i])
		}
		is := issued[i]
		rec, err := c.Record(is.Cert.SerialNumber)
		if err != nil || rec.Status != StatusValid || rec.ACMEAccount != fins[i].Order.Account || rec.Name != fins[i].Order.Identifiers[0].Value {
			t.Errorf("order %d: record %+v, %v; want valid, of %s", i, rec, err, fins[i].Order.Account)
		}
		if !fins[i].CSR.PublicKey.(*ecdsa.PublicKey).Equal(is.Cert.PublicKey) {
			t.Errorf("order %d: the certificate does not certify the CSR's key", i)
		}
		if got := fileString(t, is.CertFile); got != string(pemCert(is.Cert)) {
			t.Errorf("order %d: %s does not hold the certificate", i, is.CertFile)
		}
		if got := fileString(t, is.ChainFile); got != string(c.chainPEM(is.Cert)) {
			t.Errorf("order %d: %s does not hold the chain", i, is.ChainFile)
		}
		if cert, _, chain := readCurrent(t, c, rec.Name); cert != "" || chain != "" {
			t.Errorf("order %d: current.* links of %s; want none", i, rec.Name)
		}
	}
	if issued[0].Record.Serial == issued[2].Record.Serial {
		t.Error("two orders of one name got the same serial")
	}
	if rep, err := c.Check(); err != nil || len(rep.Repaired) != 0 {
		t.Errorf("Check() after the batch repaired %v, %v; want nothing", rep, err)
	}
}

func TestIssueACMERefusesCSR(t *testing.T) {
	c, signer := newEnrollCA(t)
	order := ACMEOrder{Account: "a", Identifiers: []ACMEIdentifier{dnsID("web.example.com"), dnsID("api.example.com")}, Policy: ACMEOpen()}
	names := []string{"web.example.com", "api.example.com"}
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	caCSR := func() *x509.CertificateRequest {
		bc, _ := asn1.Marshal(struct{ IsCA bool }{true})
		return newCSR(t, newKey(t), &x509.CertificateRequest{DNSNames: names,
			ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 19}, Critical: true, Value: bc}}})
	}
	badSig := acmeCSR(t, newKey(t), "", names)
	badSig.Signature = slices.Clone(badSig.Signature)
	badSig.Signature[len(badSig.Signature)-1] ^= 1
	tests := []struct {
		name    string
		csr     *x509.CertificateRequest
		wantErr string
	}{
		{"an extra name", acmeCSR(t, newKey(t), "", append(slices.Clone(names), "evil.example.com")), `it asks for dns "evil.example.com", which the order does not name`},
		{"a name missing", acmeCSR(t, newKey(t), "", names[:1]), `it does not ask for dns "api.example.com", which the order names`},
		{"an extra IP", acmeCSR(t, newKey(t), "", names, "10.0.0.1"), `it asks for ip "10.0.0.1"`},
		{"a CN not in the order", acmeCSR(t, newKey(t), "other.example.com", names), `its common name "other.example.com" is not one of the order's identifiers`},
		{"an email", newCSR(t, newKey(t), &x509.CertificateRequest{DNSNames: names, EmailAddresses: []string{"a@example.com"}}), `it asks for email:a@example.com`},
		{"a weak key", acmeCSR(t, rsa1024, "", names), `weak key: RSA 1024 bits`},
		{"CA:TRUE", caCSR(), `it asks to be a CA`},
		{"a bad signature", badSig, `its signature`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.IssueACME(signer, order, tt.csr)
			if err == nil || !errors.Is(err, ErrACMECSR) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("IssueACME() error = %v; want ErrACMECSR containing %q", err, tt.wantErr)
			}
		})
	}
	for r, err := range c.Records() {
		t.Errorf("a refused CSR left a record: %+v, %v", r, err)
	}
	// A name only in the CN counts (RFC 8555 section 7.4).
	one := order
	one.Identifiers = order.Identifiers[:1]
	if _, err := c.IssueACME(signer, one, acmeCSR(t, newKey(t), "web.example.com", nil)); err != nil {
		t.Errorf("IssueACME() of a CSR naming its identifier in the CN only: %v", err)
	}
}

func TestIssueACMENames(t *testing.T) {
	c, signer := newEnrollCA(t)
	long := strings.Repeat("a", 60) + ".svc.example.com"
	tests := []struct {
		name     string
		ids      []ACMEIdentifier
		p        ACMEPolicy
		wantName string
		wantCN   string
	}{
		{"IP only", []ACMEIdentifier{ipID("10.0.0.7")}, ACMEOpen(), "10.0.0.7", "10.0.0.7"},
		{"IPv6", []ACMEIdentifier{ipID("2001:db8::1")}, ACMEOpen(), "ip6_2001_db8__1", "2001:db8::1"},
		{"wildcard", []ACMEIdentifier{dnsID("*.svc.example.com")}, ACMEPolicy{DNSSuffixes: []string{"svc.example.com"}}, "wildcard_.svc.example.com", "*.svc.example.com"},
		{"a long name", []ACMEIdentifier{dnsID(long)}, ACMEOpen(), "", ""},
		{"a long name, then a short one", []ACMEIdentifier{dnsID(long), dnsID("b.svc.example.com")}, ACMEOpen(), "", "b.svc.example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr := &x509.CertificateRequest{}
			for _, id := range tt.ids {
				if id.Type == "dns" {
					csr.DNSNames = append(csr.DNSNames, id.Value)
				} else {
					csr.IPAddresses = append(csr.IPAddresses, net.ParseIP(id.Value))
				}
			}
			issued, err := c.IssueACME(signer, ACMEOrder{Account: "a", Identifiers: tt.ids, Policy: tt.p}, newCSR(t, newKey(t), csr))
			if err != nil {
				t.Fatalf("IssueACME() error = %v", err)
			}
			name := issued.Record.Name
			if err := ValidateName(name); err != nil || (tt.wantName != "" && name != tt.wantName) {
				t.Errorf("record name %q (%v); want %q", name, err, tt.wantName)
			}
			if tt.wantName == "" && (len(name) != 64 || !strings.HasPrefix(name, long[:55]+"_")) {
				t.Errorf("record name %q; want the long name cut, with a hash", name)
			}
			if cn := issued.Cert.Subject.CommonName; cn != tt.wantCN {
				t.Errorf("CN %q; want %q", cn, tt.wantCN)
			}
		})
	}
}

func TestIssueACMELifetimeWithinTheCA(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Now: fixedClock(start), Validity: 30 * 24 * time.Hour})
	c.Now = fixedClock(start)
	order := ACMEOrder{Account: "a", Identifiers: []ACMEIdentifier{dnsID("web.example.com")}, Policy: ACMEPolicy{Lifetime: 20 * 24 * time.Hour}}
	if _, err := c.CreateACMEBinding("long", ACMEPolicy{Lifetime: 40 * 24 * time.Hour}); !errors.Is(err, ErrOutlivesCA) {
		t.Errorf("CreateACMEBinding() of a lifetime beyond the CA error = %v; want ErrOutlivesCA", err)
	}
	// Later the CA's end is nearer than the binding's lifetime: cut.
	c.Now = fixedClock(start.Add(25 * 24 * time.Hour))
	issued, err := c.IssueACME(signer, order, acmeCSR(t, newKey(t), "", []string{"web.example.com"}))
	if err != nil {
		t.Fatalf("IssueACME() near the CA's end: %v", err)
	}
	if na := issued.Cert.NotAfter; na.After(c.Cert.NotAfter) || c.Cert.NotAfter.Sub(na) > time.Hour {
		t.Errorf("notAfter %s; want just before the CA's %s", na, c.Cert.NotAfter)
	}
	c.Now = fixedClock(c.Cert.NotAfter.Add(-time.Minute))
	if _, err := c.IssueACME(signer, order, acmeCSR(t, newKey(t), "", []string{"web.example.com"})); !errors.Is(err, ErrOutlivesCA) {
		t.Errorf("IssueACME() a minute before the CA's end error = %v; want ErrOutlivesCA", err)
	}
}

func TestACMERenewalWindow(t *testing.T) {
	c, signer := newEnrollCA(t)
	order := ACMEOrder{Account: "a", Identifiers: []ACMEIdentifier{dnsID("web.example.com")}, Policy: ACMEPolicy{Lifetime: 6 * 24 * time.Hour}}
	issue := func() *Record {
		t.Helper()
		issued, err := c.IssueACME(signer, order, acmeCSR(t, newKey(t), "", []string{"web.example.com"}))
		if err != nil {
			t.Fatal(err)
		}
		return issued.Record
	}
	rec := issue()
	now := enrollStart.Add(time.Hour)
	start, end, err := c.ACMERenewalWindow(rec, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := rec.NotBefore.Add(4 * 24 * time.Hour); !start.Equal(want) || !end.Equal(rec.NotBefore.Add(5*24*time.Hour)) {
		t.Errorf("default window %s to %s; want %s (two thirds) to five sixths of the life", start, end, want)
	}
	urgent := func(rec *Record) bool {
		t.Helper()
		start, end, err := c.ACMERenewalWindow(rec, now)
		if err != nil {
			t.Fatal(err)
		}
		// Wholly in the past: RFC 9773's client renews at once.
		return start.Equal(now.Add(-2*time.Hour)) && end.Equal(now.Add(-time.Hour))
	}

	// Renew-now for the name moves its certificates, not those issued later.
	other := issue()
	n, err := c.ACMERenewNow("web.example.com", false, now)
	if err != nil || n != 2 {
		t.Fatalf("ACMERenewNow(web.example.com) = %d, %v; want 2", n, err)
	}
	if !urgent(rec) || !urgent(other) {
		t.Error("after renew-now the window is not in the past")
	}
	later := issue()
	if urgent(later) {
		t.Error("a certificate issued after renew-now has an urgent window")
	}
	if _, err := c.ACMERenewNow("nobody", false, now); !errors.Is(err, ErrNotFound) {
		t.Errorf("ACMERenewNow(nobody) error = %v; want ErrNotFound", err)
	}

	// Revoked: in the past.
	if _, err := c.Revoke(mustSerial(t, later.Serial), revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	revoked, err := c.recordHex(later.Serial)
	if err != nil {
		t.Fatal(err)
	}
	if !urgent(revoked) {
		t.Error("a revoked certificate's window is not in the past")
	}

	// --all: every ACME certificate issued until now.
	fresh := issue()
	c.Now = fixedClock(enrollStart.Add(time.Minute))
	n, err = c.ACMERenewNow("", true, now)
	if err != nil || n != 3 {
		t.Errorf("ACMERenewNow(all) = %d, %v; want 3 valid ACME certificates", n, err)
	}
	if !urgent(fresh) {
		t.Error("after renew-now --all the window is not in the past")
	}
}

func TestACMERenewalWindowOfARevokedCA(t *testing.T) {
	root, inter := newACMEHierarchy(t)
	issued, err := inter.IssueACME(signerOf(t, inter), ACMEOrder{Account: "a", Identifiers: []ACMEIdentifier{dnsID("web.example.com")}, Policy: ACMEOpen()},
		acmeCSR(t, newKey(t), "", []string{"web.example.com"}))
	if err != nil {
		t.Fatal(err)
	}
	now := hierNow.Add(time.Hour)
	if start, _, err := inter.ACMERenewalWindow(issued.Record, now); err != nil || !start.After(now) {
		t.Fatalf("window before the CA's revocation starts %s (%v); want the default", start, err)
	}
	if _, err := root.Revoke(inter.Cert.SerialNumber, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	if _, err := inter.ImportRootCRL(rootCRL(t, root)); err != nil {
		t.Fatal(err)
	}
	if start, end, err := inter.ACMERenewalWindow(issued.Record, now); err != nil || !start.Equal(now.Add(-2*time.Hour)) || !end.Equal(now.Add(-time.Hour)) {
		t.Errorf("window after the CA's revocation %s to %s (%v); want two hours ago to an hour ago", start, end, err)
	}
	// Revoked at its root, the CA issues nothing more over ACME: its
	// clients, told to renew, must go to its successor.
	if err := inter.CheckACMEIssuer(); !errors.Is(err, ErrACMECARevoked) || !strings.Contains(err.Error(), "succeeds it") {
		t.Errorf("CheckACMEIssuer of a CA revoked at its root = %v; want ErrACMECARevoked naming its successor", err)
	}
	before := countRecords(t, inter)
	_, err = inter.IssueACME(signerOf(t, inter), ACMEOrder{Account: "a", Identifiers: []ACMEIdentifier{dnsID("web.example.com")}, Policy: ACMEOpen()},
		acmeCSR(t, newKey(t), "", []string{"web.example.com"}))
	if !errors.Is(err, ErrACMECARevoked) {
		t.Errorf("IssueACME by a CA revoked at its root: %v; want ErrACMECARevoked", err)
	}
	if after := countRecords(t, inter); after != before {
		t.Errorf("the refused issuance left %d records; want %d", after, before)
	}
	if err := root.CheckACMEIssuer(); err != nil {
		t.Errorf("CheckACMEIssuer of the root = %v; want nil", err)
	}
}

func mustSerial(t *testing.T, s string) *big.Int {
	t.Helper()
	n, err := ParseSerial(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
