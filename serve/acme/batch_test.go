package acme

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	xacme "golang.org/x/crypto/acme"
)

// readyOrder makes an order of cl for localhost and validates it: its
// ID, ready to be finalized.
func (h *harness) readyOrder(t *testing.T, cl *xacme.Client) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o, err := cl.AuthorizeOrder(ctx, xacme.DomainIDs("localhost"))
	if err != nil {
		t.Fatal(err)
	}
	az, err := cl.GetAuthorization(ctx, o.AuthzURLs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := h.accept(ctx, cl, az); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.WaitOrder(ctx, o.URI); err != nil {
		t.Fatal(err)
	}
	return o.URI[strings.LastIndex(o.URI, "/")+1:]
}

func parsedCSR(t *testing.T, dns ...string) *x509.CertificateRequest {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{DNSNames: dns}, newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	return csr
}

// TestIssueBatch: the finalizes of one batch are issued together, each
// answered on its own: a certificate for each ready order, badCSR for a
// CSR of another name, orderNotReady for an order not validated, and a
// second finalize of an order of the batch waits for the next batch,
// where it finds the order valid with the first one's certificate.
func TestIssueBatch(t *testing.T) {
	h := newHarness(t, harnessOptions{noEAB: true})
	cl := h.client(t)
	acct, err := h.register(t, cl, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := h.srv.obj.account(acct.URI[strings.LastIndex(acct.URI, "/")+1:])
	if err != nil {
		t.Fatal(err)
	}
	policy, err := h.srv.policyOf(a)
	if err != nil {
		t.Fatal(err)
	}
	pending, err := cl.AuthorizeOrder(context.Background(), xacme.DomainIDs("localhost"))
	if err != nil {
		t.Fatal(err)
	}
	job := func(orderID string, csr *x509.CertificateRequest) *finalizeJob {
		return &finalizeJob{account: a.ID, orderID: orderID, policy: policy, csr: csr, done: make(chan struct{})}
	}
	first, second := h.readyOrder(t, cl), h.readyOrder(t, cl)
	jobs := []*finalizeJob{
		job(first, parsedCSR(t, "localhost")),
		job(first, parsedCSR(t, "localhost")),
		job(second, parsedCSR(t, "other.example")),
		job(pending.URI[strings.LastIndex(pending.URI, "/")+1:], parsedCSR(t, "localhost")),
		job(h.readyOrder(t, cl), parsedCSR(t, "localhost")),
	}
	later := h.srv.issueBatch(jobs)
	if len(later) != 1 || later[0] != jobs[1] {
		t.Fatalf("issueBatch left %d finalizes for the next batch; want the second of the first order", len(later))
	}
	for i, j := range jobs {
		select {
		case <-j.done:
			if i == 1 {
				t.Error("the second finalize of an order is done in the batch of the first")
			}
		default:
			if i != 1 {
				t.Errorf("finalize %d is not done after its batch", i)
			}
		}
	}
	for _, i := range []int{0, 4} {
		if j := jobs[i]; j.err != nil || j.issued == nil || j.order.Status != statusValid || j.order.Serial != j.issued.Record.Serial {
			t.Errorf("finalize %d = %+v, %v; want a certificate and the order valid", i, j.issued, j.err)
		}
	}
	if jobs[0].issued.Record.Serial == jobs[4].issued.Record.Serial {
		t.Error("two orders of one batch got the same serial")
	}
	var p *problem
	if err := jobs[2].err; !errors.As(err, &p) || p.Type != errNS+ErrBadCSR {
		t.Errorf("a CSR for another name = %v; want badCSR", err)
	}
	if err := jobs[3].err; !errors.As(err, &p) || p.Type != errNS+ErrOrderNotReady {
		t.Errorf("an order not validated = %v; want orderNotReady", err)
	}
	if o, err := h.srv.obj.order(second); err != nil || o.Status != "" {
		t.Errorf("the order of the bad CSR = %+v, %v; want it ready still", o, err)
	}
	if again := h.srv.issueBatch(later); len(again) != 0 {
		t.Fatalf("the next batch left %d finalizes", len(again))
	}
	if j := jobs[1]; j.err != nil || j.issued != nil || j.order.Serial != jobs[0].issued.Record.Serial {
		t.Errorf("the second finalize of an order = %+v, %+v, %v; want the order valid with the first's certificate, none issued", j.order, j.issued, j.err)
	}
}

// TestFinalizeAfterClose: once the Server is closed its issuer is gone,
// and a finalize is refused with serverInternal, issuing nothing.
func TestFinalizeAfterClose(t *testing.T) {
	h := newHarness(t, harnessOptions{noEAB: true})
	cl := h.client(t)
	acct, err := h.register(t, cl, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := h.readyOrder(t, cl)
	h.srv.Close()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{DNSNames: []string{"localhost"}}, newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"csr":"` + b64(der) + `"}`)
	if st, typ, _ := h.post(t, orderPath+id+"/finalize", rawPost{key: cl.Key, kid: acct.URI, payload: payload}); st != http.StatusInternalServerError || typ != ErrServerInternal {
		t.Errorf("a finalize after Close = %d %s; want 500 serverInternal", st, typ)
	}
	if o, err := h.srv.obj.order(id); err != nil || o.Status != "" || o.Serial != "" {
		t.Errorf("the order after a finalize refused = %+v, %v; want it ready, without a certificate", o, err)
	}
}
