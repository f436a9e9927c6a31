package serve

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"minica/ca"
	"minica/serve/internal/servetest"
)

// newIntermediateServer is a root with the CRL URL rootURL and an
// intermediate with the CRL URL ownURL, imported with the root's CRL, and
// a Server over the intermediate.
func newIntermediateServer(t *testing.T, rootURL, ownURL string) (*fixture, *ca.CA) {
	t.Helper()
	clk := servetest.NewClock(start)
	dir := t.TempDir()
	rs := ca.DefaultSettings()
	rs.CRLURL = rootURL
	root, err := ca.Init(filepath.Join(dir, "root"), ca.InitOptions{CommonName: "Root", Root: true, Settings: rs, Now: clk.Now, FirstCRL: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	root.Now = clk.Now
	is := ca.DefaultSettings()
	is.CRLURL = ownURL
	p, err := ca.InitPending(filepath.Join(dir, "int"), ca.InitOptions{CommonName: "Issuing", Settings: is})
	if err != nil {
		t.Fatal(err)
	}
	rootKey, err := root.LoadSigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := root.SignIntermediate(rootKey, ca.IntermediateRequest{Name: "int", CSR: p.CSR})
	if err != nil {
		t.Fatal(err)
	}
	crl, err := root.ReadPublishedCRL()
	if err != nil {
		t.Fatal(err)
	}
	inter, err := ca.ImportIntermediate(p.Dir, ca.ImportOptions{Certs: []*x509.Certificate{signed.Cert, root.Cert}, RootCRL: crl.DER, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inter.Close() })
	inter.Now = clk.Now
	f := &fixture{dir: p.Dir, ca: inter, clock: clk, timers: newTimers(), log: &servetest.Log{}}
	if f.signer, err = inter.LoadSigner(nil); err != nil {
		t.Fatal(err)
	}
	if f.srv, err = New(Config{CA: inter, Signer: f.signer, Now: clk.Now, NewTimer: f.timers.New, Log: f.log, LockTimeout: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	return f, root
}

func TestServeRootCRL(t *testing.T) {
	f, root := newIntermediateServer(t, "http://pki.example.com/root.crl", "http://pki.example.com/issuing.crl")
	rootDER := readFile(t, filepath.Join(root.Dir().Path(), ca.CRLDERFile))
	ownDER := readFile(t, filepath.Join(f.dir, ca.CRLDERFile))
	for _, tt := range []struct {
		target, contentType string
		want                []byte
	}{
		{"/root-crl.der", "application/pkix-crl", rootDER},
		{"/root-crl.pem", "application/x-pem-file", pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: rootDER})},
		{"/root.crl", "application/pkix-crl", rootDER}, // the root's CRL URL, on this host
		{"/issuing.crl", "application/pkix-crl", ownDER},
		{"/crl.der", "application/pkix-crl", ownDER},
	} {
		rec := f.do(t, http.MethodGet, tt.target)
		if rec.Code != 200 || rec.Header().Get("Content-Type") != tt.contentType || !bytes.Equal(rec.Body.Bytes(), tt.want) {
			t.Errorf("GET %s: %d %q, body of %d bytes; want 200 %q, the CRL (%d bytes)", tt.target, rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len(), tt.contentType, len(tt.want))
		}
		if tt.target == "/root-crl.der" {
			etag := rec.Header().Get("ETag")
			if again := f.do(t, http.MethodGet, tt.target, "If-None-Match", etag); again.Code != http.StatusNotModified {
				t.Errorf("GET %s with its ETag: %d; want 304", tt.target, again.Code)
			}
		}
	}

	// A root CRL imported later (crl import-root) is served at once.
	f.clock.Set(start.Add(time.Hour))
	rootKey, err := root.LoadSigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := root.PublishCRL(rootKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	other := f.other(t)
	if _, err := other.ImportRootCRL(info.DER); err != nil {
		t.Fatal(err)
	}
	if rec := f.do(t, http.MethodGet, "/root-crl.der"); !bytes.Equal(rec.Body.Bytes(), info.DER) {
		t.Errorf("after import-root: GET /root-crl.der is not the new root CRL")
	}
}

func TestServeRootCRLOtherHost(t *testing.T) {
	f, _ := newIntermediateServer(t, "http://root.example.net/root.crl", "http://pki.example.com/issuing.crl")
	if rec := f.do(t, http.MethodGet, "/root.crl"); rec.Code != http.StatusNotFound {
		t.Errorf("GET /root.crl of another host: %d; want 404", rec.Code)
	}
	if rec := f.do(t, http.MethodGet, "/root-crl.der"); rec.Code != 200 {
		t.Errorf("GET /root-crl.der: %d; want 200", rec.Code)
	}
}

func TestServeNoRootCRLForPlainCA(t *testing.T) {
	f := newFixture(t, nil)
	if rec := f.do(t, http.MethodGet, "/root-crl.der"); rec.Code != http.StatusNotFound {
		t.Errorf("GET /root-crl.der on a CA of its own: %d; want 404", rec.Code)
	}
}
