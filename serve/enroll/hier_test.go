package enroll

import (
	"bytes"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/ca"
	"minica/formats"
)

// newIntermediate makes a root and an intermediate below it, in real time,
// and returns both.
func newIntermediate(t *testing.T) (root, inter *ca.CA) {
	t.Helper()
	dir := t.TempDir()
	settings := ca.DefaultSettings()
	settings.CRLURL = "http://pki.example.com/root.crl"
	root, err := ca.Init(filepath.Join(dir, "root"), ca.InitOptions{CommonName: "Test Root", Root: true, Settings: settings, FirstCRL: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	rootSigner, err := root.LoadSigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ca.InitPending(filepath.Join(dir, "int"), ca.InitOptions{CommonName: "Test Issuing"})
	if err != nil {
		t.Fatal(err)
	}
	is, err := root.SignIntermediate(rootSigner, ca.IntermediateRequest{Name: "int", CSR: p.CSR, Validity: 2 * 365 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	crl, err := os.ReadFile(filepath.Join(root.Dir().Path(), ca.CRLDERFile))
	if err != nil {
		t.Fatal(err)
	}
	if inter, err = ca.ImportIntermediate(p.Dir, ca.ImportOptions{Certs: []*x509.Certificate{is.Cert, root.Cert}, RootCRL: crl}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inter.Close() })
	return root, inter
}

// serve --enroll on a root is refused: a root issues no leaves.
func TestNewEnrollerRefusesRoot(t *testing.T) {
	root, _ := newIntermediate(t)
	signer, err := root.LoadSigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{CA: root, Signer: signer}); err == nil || !strings.Contains(err.Error(), "a root CA signs only intermediate CAs") {
		t.Errorf("New on a root error = %v; want it refused as a root", err)
	}
}

// Under an intermediate the bundle holds the leaf, the intermediate and the
// root, and the Apple profile's root payload is the root, not the
// intermediate: a device trusts a root, and gets the intermediate from the
// bundle.
func TestEnrollBundlesUnderIntermediate(t *testing.T) {
	root, inter := newIntermediate(t)
	signer, err := inter.LoadSigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{CA: inter, Signer: signer, AllowHTTP: true, P12Iterations: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"p12", "p12-compat", "mobileconfig"} {
		t.Run(format, func(t *testing.T) {
			unlock, err := inter.Lock(time.Second)
			if err != nil {
				t.Fatal(err)
			}
			created, err := inter.CreateEnrollment("user-"+format, ca.EnrollIdentity{}, time.Hour)
			unlock()
			if err != nil {
				t.Fatal(err)
			}
			e, _ := inter.LookupEnrollment(created.Token)
			req := httptest.NewRequest(http.MethodPost, "/enroll/"+created.Token, strings.NewReader(download(csrfToken(e), testPassword, format).Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("download = %d:\n%s", rec.Code, rec.Body)
			}
			p12 := rec.Body.Bytes()
			if format == "mobileconfig" {
				p12 = checkMobileconfig(t, p12, root.Cert)
			}
			_, leaf, chain, err := formats.DecodeP12(p12, testPassword)
			if err != nil {
				t.Fatalf("the bundle does not open: %v", err)
			}
			if len(chain) != 2 || !hasCert(chain, inter.Cert) || !hasCert(chain, root.Cert) {
				t.Errorf("the bundle holds %d CA certificates; want the intermediate and the root", len(chain))
			}
			roots, ints := x509.NewCertPool(), x509.NewCertPool()
			roots.AddCert(root.Cert)
			ints.AddCert(inter.Cert)
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: ints, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("the leaf does not chain to the root: %v", err)
			}
		})
	}
}

func hasCert(list []*x509.Certificate, c *x509.Certificate) bool {
	for _, x := range list {
		if bytes.Equal(x.Raw, c.Raw) {
			return true
		}
	}
	return false
}
