package acme

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"net/http"
	"testing"
	"time"

	xacme "golang.org/x/crypto/acme"
)

// TestOrderKeepsItsAuthorization: the authorization of an order of one
// identifier lives in the order's object, with no object of its own, and
// is read, validated and deactivated (once) as any other; deactivating it after
// the order was finalized leaves the order valid with its certificate.
// An order of two identifiers keeps an object per authorization, and an
// authorization ID that names no order's is 404.
func TestOrderKeepsItsAuthorization(t *testing.T) {
	h := newHarness(t, harnessOptions{noEAB: true})
	cl := h.client(t)
	if _, err := h.register(t, cl, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o, err := cl.AuthorizeOrder(ctx, xacme.DomainIDs("localhost"))
	if err != nil {
		t.Fatal(err)
	}
	if len(o.AuthzURLs) != 1 {
		t.Fatalf("an order of one identifier has %d authorizations", len(o.AuthzURLs))
	}
	az, err := cl.GetAuthorization(ctx, o.AuthzURLs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := h.accept(ctx, cl, az); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.WaitAuthorization(ctx, az.URI); err != nil {
		t.Fatal(err)
	}
	if o, err = cl.WaitOrder(ctx, o.URI); err != nil {
		t.Fatal(err)
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{DNSNames: []string{"localhost"}}, newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := cl.CreateOrderCert(ctx, o.FinalizeURL, csr, true); err != nil {
		t.Fatal(err)
	}
	if n := countObjects(t, h, kindAuthz); n != 0 {
		t.Errorf("%d authorization objects after an order of one identifier; want 0 (the order keeps it)", n)
	}
	if err := cl.RevokeAuthorization(ctx, az.URI); err != nil {
		t.Fatalf("deactivating the authorization: %v", err)
	}
	if az, err = cl.GetAuthorization(ctx, az.URI); err != nil || az.Status != xacme.StatusDeactivated {
		t.Errorf("the authorization after its deactivation = %+v, %v; want deactivated", az, err)
	}
	if err := cl.RevokeAuthorization(ctx, az.URI); acmeErr(err) != ErrMalformed {
		t.Errorf("deactivating it again = %v; want malformed", err)
	}
	if o, err = cl.GetOrder(ctx, o.URI); err != nil || o.Status != xacme.StatusValid || o.CertURL == "" {
		t.Errorf("the order after its authorization's deactivation = %+v, %v; want valid with its certificate", o, err)
	}
	for _, u := range []string{h.ts.URL + authzPath + "nosuchorder.1", az.URI + "x"} {
		var ae *xacme.Error
		if _, err := cl.GetAuthorization(ctx, u); !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %v; want 404", u, err)
		}
	}

	if _, err := h.obtain(t, cl, newKey(t), xacme.DomainIDs("localhost")[0], xacme.IPIDs("127.0.0.1")[0]); err != nil {
		t.Fatal(err)
	}
	if n := countObjects(t, h, kindAuthz); n != 2 {
		t.Errorf("%d authorization objects after an order of two identifiers; want 2", n)
	}
}
