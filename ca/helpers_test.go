package ca

import (
	"crypto"
	"minica/ca/store/pg"
	"testing"
	"time"
)

// newTestCA creates a CA with an unencrypted key in a fresh directory.
func newTestCA(t testing.TB, o InitOptions) (*CA, crypto.Signer) {
	t.Helper()
	return newTestCAIn(t, t.TempDir(), o)
}

// newTestCAIn is newTestCA with the CA directory made in dir.
func newTestCAIn(t testing.TB, dir string, o InitOptions) (*CA, crypto.Signer) {
	t.Helper()
	if o.CommonName == "" {
		o.CommonName = "Test Root"
	}
	if o.Engines == nil {
		o.Engines = testEngines
	}
	c, err := Init(dir+"/ca", o)
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	signer, err := c.LoadSigner(nil)
	if err != nil {
		t.Fatalf("LoadSigner: %v", err)
	}
	return c, signer
}

// fixedClock returns a clock stopped at t.
func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

// testEngines are the store engines the tests' CAs may use beside their
// directory's files, as cmd/minica gives them.
var testEngines = []Engine{pg.Engine{}}

// openTest opens the CA at dir as Open does, with testEngines.
func openTest(dir string) (*CA, error) {
	return OpenWith(dir, OpenOptions{Engines: testEngines})
}
