package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"strings"
	"testing"

	"minica/ca"
)

// issueACME issues, as serve's ACME server would, a certificate for dns
// to the ACME account acct in the CA at dir.
func issueACME(t *testing.T, dir, acct, dns string) *ca.Issued {
	t.Helper()
	authority, err := ca.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer authority.Close()
	signer, err := authority.LoadSigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{DNSNames: []string{dns}}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := authority.Lock(0)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	issued, err := authority.IssueACME(signer, ca.ACMEOrder{Account: acct, Identifiers: []ca.ACMEIdentifier{{Type: "dns", Value: dns}}, Policy: ca.ACMEOpen()}, csr)
	if err != nil {
		t.Fatalf("IssueACME: %v", err)
	}
	return issued
}

// show and list --json name the ACME account of an ACME certificate, and
// renew-now moves the valid ACME certificates of a name, or of all.
func TestACMECertificateCommands(t *testing.T) {
	t.Parallel()
	dir := newCADir(t)
	first := issueACME(t, dir, "acct-1", "web.example.com")
	issueACME(t, dir, "acct-1", "web.example.com") // a renewal
	issueACME(t, dir, "acct-2", "api.example.com")
	mustMinica(t, dir, "issue", "server", "plain.example.com")

	if out := mustMinica(t, dir, "show", first.Record.Serial); !strings.Contains(out, "\naccount     acct-1 (ACME)\n") {
		t.Errorf("show of an ACME certificate does not name its account:\n%s", out)
	}
	if out := mustMinica(t, dir, "show", "plain.example.com"); strings.Contains(out, "account") {
		t.Errorf("show of a certificate issued otherwise names an account:\n%s", out)
	}
	accounts := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(mustMinica(t, dir, "list", "--json")), "\n") {
		var r struct {
			Name    string `json:"name"`
			Account string `json:"acme_account"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		accounts[r.Name] = r.Account
	}
	if accounts["web.example.com"] != "acct-1" || accounts["api.example.com"] != "acct-2" || accounts["plain.example.com"] != "" {
		t.Errorf("list --json accounts = %v; want web acct-1, api acct-2, plain none", accounts)
	}

	if out := mustMinica(t, dir, "acme", "renew-now", "web.example.com"); out != "2 valid ACME certificate(s) of \"web.example.com\" to renew now: clients that check renewal information (ARI) renew within minutes\n" {
		t.Errorf("renew-now web.example.com:\n%s", out)
	}
	if out := mustMinica(t, dir, "acme", "renew-now", "--all", "--json"); out != `{"all":true,"moved":3}`+"\n" {
		t.Errorf("renew-now --all --json = %s; want 3 moved", out)
	}
	out, stderr, code := minica(t, dir, "acme", "renew-now", "plain.example.com")
	if code != 0 || !strings.HasPrefix(out, "0 valid ACME certificate(s)") || !strings.Contains(stderr, "minica renew plain.example.com") {
		t.Errorf("renew-now of a name without ACME certificates = exit %d\n%s%s", code, out, stderr)
	}

	// The window moved: the CA says so for the first certificate.
	authority, err := ca.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer authority.Close()
	rec, err := authority.Record(first.Cert.SerialNumber)
	if err != nil {
		t.Fatal(err)
	}
	now := authority.Now()
	if _, end, err := authority.ACMERenewalWindow(rec, now); err != nil || end.After(now) {
		t.Errorf("window after renew-now ends %s (%v); want in the past", end, err)
	}
}
