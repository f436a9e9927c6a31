package ca

import (
	"slices"
	"testing"
	"time"

	"minica/internal/certlint"
)

func TestSetCRLURL(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Now: fixedClock(start)})
	c.Now = fixedClock(start)
	const u = "http://pki.example.com/ca.crl"
	if err := c.SetCRLURL(u); err != nil {
		t.Fatalf("SetCRLURL() error = %v", err)
	}
	reopened, err := Open(c.Dir().Path())
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	if reopened.Settings.CRLURL != u {
		t.Errorf("settings after reopening: CRL URL %q; want %q", reopened.Settings.CRLURL, u)
	}
	for _, p := range []Profile{Client, Server} {
		req := Request{Name: "leaf-" + string(p), Profile: p}
		if p == Server {
			req.DNSNames = []string{"web.example.com"}
		}
		is, err := c.Issue(signer, req)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(is.Cert.CRLDistributionPoints, []string{u}) {
			t.Errorf("%s: CRL distribution points %q; want %q", p, is.Cert.CRLDistributionPoints, u)
		}
		certlint.Certificate(t, is.Cert.Raw)
	}
	for _, bad := range []string{"ftp://x.example/a.crl", "http:///a.crl", "pki.example.com/ca.crl", "http://a b/", "http://user@x.example/", "http://x.example/é"} {
		if err := c.SetCRLURL(bad); err == nil {
			t.Errorf("SetCRLURL(%q) accepted", bad)
		} else if want := "invalid CRL URL " + printable(bad) + ": want an http:// or https:// URL such as http://pki.example.com/ca.crl"; err.Error() != want {
			t.Errorf("SetCRLURL(%q) error = %q; want %q", bad, err, want)
		}
	}
	if c.Settings.CRLURL != u {
		t.Errorf("a refused URL changed the settings to %q", c.Settings.CRLURL)
	}
	if err := c.SetCRLURL(""); err != nil || c.Settings.CRLURL != "" {
		t.Errorf("SetCRLURL(\"\") = %v, URL %q; want cleared", err, c.Settings.CRLURL)
	}
}
