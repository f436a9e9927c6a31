package ca

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// readCurrent returns the contents behind name's current.* links, "" for a
// missing one.
func readCurrent(t *testing.T, c *CA, name string) (cert, key, chain string) {
	t.Helper()
	read := func(p string) string {
		b, err := os.ReadFile(c.Path(p))
		if os.IsNotExist(err) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return read(CurrentCertPath(name)), read(CurrentKeyPath(name)), read(CurrentChainPath(name))
}

func fileString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCurrentLinksFollowReissue: certs/NAME/current.* are the newest
// certificate's files, move to the successor on a re-issue, lose the key
// link when the successor's key is not minica's, and Check puts them back
// after a crash left them on the old serial or missing.
func TestCurrentLinksFollowReissue(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	first, err := c.Issue(signer, Request{Name: "web", Profile: Server, DNSNames: []string{"web.example"}})
	if err != nil {
		t.Fatal(err)
	}
	assertCurrent := func(is *Issued, withKey bool) {
		t.Helper()
		cert, key, chain := readCurrent(t, c, "web")
		if cert != fileString(t, is.CertFile) || chain != fileString(t, is.ChainFile) {
			t.Errorf("current.crt/current.chain.pem are not serial %s's files", is.Record.Serial)
		}
		if withKey && key != fileString(t, is.KeyFile) {
			t.Errorf("current.key is not serial %s's key", is.Record.Serial)
		}
		if !withKey && key != "" {
			t.Errorf("current.key exists for serial %s, whose key minica does not hold", is.Record.Serial)
		}
	}
	assertCurrent(first, true)
	if rec, err := c.Current("web"); err != nil || rec.Serial != first.Record.Serial {
		t.Fatalf("Current() = %v, %v; want serial %s", rec, err, first.Record.Serial)
	}

	c.Now = func() time.Time { return time.Now().Add(2 * time.Second) }
	second, err := c.Issue(signer, Request{Name: "web", Profile: Server, DNSNames: []string{"web.example"}, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	assertCurrent(second, true)

	// A crash between the renames: the certificate link still on the
	// old serial, the key link gone.
	web, _, err := c.dir.MkdirSub(certDir("web"))
	if err != nil {
		t.Fatal(err)
	}
	err = replaceLink(web, CurrentCertFile, first.Record.Serial+".crt", false)
	web.Close()
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(c.Path(CurrentKeyPath("web")))
	rep, err := c.Check()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Repaired) != 1 || !bytes.Contains([]byte(rep.Repaired[0]), []byte("current.* links of web at serial "+second.Record.Serial)) {
		t.Errorf("Check() repaired %q; want the current.* links of web pointed at %s", rep.Repaired, second.Record.Serial)
	}
	assertCurrent(second, true)
	if rep, _ := c.Check(); len(rep.Repaired) != 0 {
		t.Errorf("second Check() repaired %q; want nothing", rep.Repaired)
	}

	// A successor signed from a CSR: minica has no key, so no current.key.
	c.Now = func() time.Time { return time.Now().Add(4 * time.Second) }
	third, err := c.Issue(signer, Request{Name: "web", Profile: Server, DNSNames: []string{"web.example"}, Force: true, PublicKey: second.Key.Public()})
	if err != nil {
		t.Fatal(err)
	}
	assertCurrent(third, false)
}
