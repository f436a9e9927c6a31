package acme

import (
	"cmp"
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	xacme "golang.org/x/crypto/acme"

	"minica/ca"
)

// TestReplicasShareState: three Servers on handles of their own answer a
// client's requests in turn (a nonce from one used at another, an order
// made at one, validated and finalized at others), as serve replicas
// behind a load balancer do; and a nonce is still good once only.
func TestReplicasShareState(t *testing.T) {
	h := newHarness(t, harnessOptions{replicas: 3})
	b := h.binding(t, "web", ca.ACMEPolicy{DNSNames: []string{"localhost"}})
	cl := h.client(t)
	acct, err := h.register(t, cl, b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := h.obtain(t, cl, newKey(t), xacme.DomainIDs("localhost")...); err != nil {
			t.Fatalf("order %d across replicas: %v", i, err)
		}
	}
	order := []byte(`{"identifiers":[{"type":"dns","value":"localhost"}]}`)
	n := h.nonce(t, h.ts.URL)
	if st, typ, _ := h.post(t, newOrderPath, rawPost{key: cl.Key, kid: acct.URI, nonce: n, payload: order}); st != http.StatusCreated {
		t.Fatalf("a nonce used once = %d %s", st, typ)
	}
	for range 2 { // the other replicas
		if st, typ, _ := h.post(t, newOrderPath, rawPost{key: cl.Key, kid: acct.URI, nonce: n, payload: order}); typ != ErrBadNonce {
			t.Errorf("the nonce used again at another replica = %d %s; want badNonce", st, typ)
		}
	}
}

// TestKeyChangeAndDeactivation: a rollover to another account's key is
// refused with 409; after a rollover the old key names no account and
// the new one works; a deactivated account orders nothing.
func TestKeyChangeAndDeactivation(t *testing.T) {
	h := newHarness(t, harnessOptions{noEAB: true})
	cl, other := h.client(t), h.client(t)
	acct, err := h.register(t, cl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.register(t, other, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var ae *xacme.Error
	if err := cl.AccountKeyRollover(ctx, other.Key); !errors.As(err, &ae) || ae.StatusCode != http.StatusConflict {
		t.Errorf("a rollover to another account's key = %v; want 409", err)
	}
	oldKey := cl.Key
	if err := cl.AccountKeyRollover(ctx, newKey(t)); err != nil {
		t.Fatalf("key rollover: %v", err)
	}
	order := []byte(`{"identifiers":[{"type":"dns","value":"localhost"}]}`)
	if st, typ, _ := h.post(t, newOrderPath, rawPost{key: oldKey, kid: acct.URI, payload: order}); st != 400 || typ != ErrMalformed {
		t.Errorf("the old key after a rollover = %d %s; want 400 malformed (bad signature)", st, typ)
	}
	if st, typ, _ := h.post(t, newAcctPath, rawPost{key: oldKey, payload: []byte(`{"onlyReturnExisting":true}`)}); typ != ErrAccountDoesNotExist {
		t.Errorf("looking up the old key = %d %s; want accountDoesNotExist", st, typ)
	}
	if _, err := cl.AuthorizeOrder(ctx, xacme.DomainIDs("localhost")); err != nil {
		t.Errorf("an order with the new key: %v", err)
	}
	if err := cl.DeactivateReg(ctx); err != nil {
		t.Fatalf("deactivation: %v", err)
	}
	if _, err := cl.AuthorizeOrder(ctx, xacme.DomainIDs("localhost")); acmeErr(err) != ErrUnauthorized {
		t.Errorf("an order of a deactivated account = %v; want unauthorized", err)
	}
}

// TestRevokeRefusals: another account, another key and a reason a client
// may not give are refused; the certificate's own key revokes it.
func TestRevokeRefusals(t *testing.T) {
	h := newHarness(t, harnessOptions{noEAB: true})
	cl, other := h.client(t), h.client(t)
	if _, err := h.register(t, cl, nil); err != nil {
		t.Fatal(err)
	}
	otherAcct, err := h.register(t, other, nil)
	if err != nil {
		t.Fatal(err)
	}
	certKey := newKey(t)
	der, err := h.obtain(t, cl, certKey, xacme.DomainIDs("localhost")...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := other.RevokeCert(ctx, nil, der[0], xacme.CRLReasonUnspecified); acmeErr(err) != ErrUnauthorized {
		t.Errorf("revocation by another account = %v; want unauthorized", err)
	}
	if err := other.RevokeCert(ctx, newKey(t), der[0], xacme.CRLReasonUnspecified); acmeErr(err) != ErrUnauthorized {
		t.Errorf("revocation signed by another key = %v; want unauthorized", err)
	}
	bad := []byte(`{"certificate":"` + b64(der[0]) + `","reason":2}`)
	if st, typ, _ := h.post(t, revokePath, rawPost{key: other.Key, kid: otherAcct.URI, payload: bad}); typ != ErrBadRevocationReason {
		t.Errorf("reason cACompromise = %d %s; want badRevocationReason", st, typ)
	}
	leaf, _ := x509.ParseCertificate(der[0])
	if rec, _ := h.f.CA.Record(leaf.SerialNumber); rec.Status != ca.StatusValid {
		t.Fatalf("after refused revocations the record is %s", rec.Status)
	}
	if err := other.RevokeCert(ctx, certKey, der[0], xacme.CRLReasonSuperseded); err != nil {
		t.Fatalf("revocation by the certificate's key: %v", err)
	}
	if rec, _ := h.f.CA.Record(leaf.SerialNumber); rec.Status != ca.StatusRevoked || rec.Reason != "superseded" {
		t.Errorf("after revocation by its key the record is %s %s", rec.Status, rec.Reason)
	}
}

// TestRateLimits: a binding's orders per hour and an account's pending
// authorizations are refused beyond their bound with rateLimited and a
// Retry-After; the next hour orders again. (By hand: x/crypto/acme sleeps
// through a Retry-After.)
func TestRateLimits(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	order := []byte(`{"identifiers":[{"type":"dns","value":"localhost"}]}`)
	hourly := newKey(t)
	hourlyKID := h.account(t, hourly, h.binding(t, "hourly", ca.ACMEPolicy{DNSNames: []string{"localhost"}, OrdersPerHour: 2, PendingAuthz: 10}))
	for i := range 2 {
		if st, typ, _ := h.post(t, newOrderPath, rawPost{key: hourly, kid: hourlyKID, payload: order}); st != http.StatusCreated {
			t.Fatalf("order %d of 2 an hour = %d %s", i+1, st, typ)
		}
	}
	st, typ, _, hdr := h.postH(t, newOrderPath, rawPost{key: hourly, kid: hourlyKID, payload: order})
	if st != http.StatusTooManyRequests || typ != ErrRateLimited || hdr.Get("Retry-After") == "" {
		t.Errorf("a third order in the hour = %d %s, Retry-After %q; want 429 rateLimited with a Retry-After", st, typ, hdr.Get("Retry-After"))
	}
	pending := newKey(t)
	pendingKID := h.account(t, pending, h.binding(t, "pending", ca.ACMEPolicy{DNSNames: []string{"localhost"}, PendingAuthz: 1}))
	if st, typ, _ := h.post(t, newOrderPath, rawPost{key: pending, kid: pendingKID, payload: order}); st != http.StatusCreated {
		t.Fatalf("a first pending authorization = %d %s", st, typ)
	}
	if st, typ, _ := h.post(t, newOrderPath, rawPost{key: pending, kid: pendingKID, payload: order}); st != http.StatusTooManyRequests || typ != ErrRateLimited {
		t.Errorf("a second pending authorization of at most 1 = %d %s; want 429 rateLimited", st, typ)
	}
	h.f.Clock.Advance(time.Hour)
	if st, typ, _ := h.post(t, newOrderPath, rawPost{key: hourly, kid: hourlyKID, payload: order}); st != http.StatusCreated {
		t.Errorf("an order in the next hour = %d %s", st, typ)
	}
}

// TestTLSALPNAndDNS01: tls-alpn-01 validates a name, dns-01 a wildcard
// under the binding's suffix.
func TestTLSALPNAndDNS01(t *testing.T) {
	h := newHarness(t, harnessOptions{tlsALPN: true})
	cl := h.client(t)
	if _, err := h.register(t, cl, h.binding(t, "svc", ca.ACMEPolicy{DNSSuffixes: []string{"svc.example.com"}})); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, typ string }{{"web1.svc.example.com", "tls-alpn-01"}, {"*.svc.example.com", "dns-01"}} {
		der, err := h.obtainWith(t, cl, tc.typ, tc.name)
		if err != nil {
			t.Errorf("%s by %s: %v", tc.name, tc.typ, err)
			continue
		}
		leaf, _ := x509.ParseCertificate(der[0])
		if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != tc.name {
			t.Errorf("%s by %s: the certificate names %v", tc.name, tc.typ, leaf.DNSNames)
		}
	}
}

// obtainWith is obtain for one DNS name, with the challenge typ.
func (h *harness) obtainWith(t *testing.T, cl *xacme.Client, typ, name string) ([][]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o, err := cl.AuthorizeOrder(ctx, xacme.DomainIDs(name))
	if err != nil {
		return nil, err
	}
	az, err := cl.GetAuthorization(ctx, o.AuthzURLs[0])
	if err != nil {
		return nil, err
	}
	if err := h.acceptType(ctx, cl, az, typ); err != nil {
		return nil, err
	}
	if _, err := cl.WaitOrder(ctx, o.URI); err != nil {
		return nil, err
	}
	csr := csrDER(t, newKey(t), &x509.CertificateRequest{DNSNames: []string{name}})
	der, _, err := cl.CreateOrderCert(ctx, o.FinalizeURL, csr, true)
	return der, err
}

// TestRenewNow: the operator's renew-now moves the window of a name's
// certificates to now.
func TestRenewNow(t *testing.T) {
	h := newHarness(t, harnessOptions{noEAB: true})
	cl := h.client(t)
	if _, err := h.register(t, cl, nil); err != nil {
		t.Fatal(err)
	}
	der, err := h.obtain(t, cl, newKey(t), xacme.DomainIDs("localhost")...)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der[0])
	if start, _ := h.renewalWindow(t, leaf); !start.After(h.f.Clock.Now()) {
		t.Fatalf("a fresh certificate's window starts at %s", start)
	}
	rec, _ := h.f.CA.Record(leaf.SerialNumber)
	unlock, err := h.f.CA.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	n, err := h.f.CA.ACMERenewNow(rec.Name, false, h.f.Clock.Now())
	unlock()
	if err != nil || n != 1 {
		t.Fatalf("ACMERenewNow = %d, %v; want 1", n, err)
	}
	if _, end := h.renewalWindow(t, leaf); end.After(h.f.Clock.Now()) {
		t.Errorf("after renew-now the window ends at %s; want in the past", end)
	}
}

// TestConcurrentClients: 20 clients at once, each its own account and
// order, all get their certificate.
func TestConcurrentClients(t *testing.T) {
	h := newHarness(t, harnessOptions{noEAB: true})
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		cl := h.client(t)
		wg.Go(func() {
			if _, errs[i] = h.register(t, cl, nil); errs[i] == nil {
				_, errs[i] = h.obtain(t, cl, newKey(t), xacme.DomainIDs("localhost")...)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Errorf("of %d clients at once: %v", n, err)
	}
}

// TestReplaces: an order's "replaces" must name a certificate of this CA
// that the account got; one of another account is unauthorized, garbage
// malformed, and the account's own is taken and echoed.
func TestReplaces(t *testing.T) {
	h := newHarness(t, harnessOptions{noEAB: true})
	cl := h.client(t)
	acct, err := h.register(t, cl, nil)
	if err != nil {
		t.Fatal(err)
	}
	der, err := h.obtain(t, cl, newKey(t), xacme.DomainIDs("localhost")...)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der[0])
	id := b64(leaf.AuthorityKeyId) + "." + b64(serialOctets(leaf))
	otherKey := newKey(t)
	otherKID := h.account(t, otherKey, nil)
	order := func(name, replaces string) []byte {
		return []byte(`{"identifiers":[{"type":"dns","value":"` + name + `"}],"replaces":"` + replaces + `"}`)
	}
	for _, tc := range []struct {
		name     string
		key      any
		kid, rep string
		ident    string // the order's identifier, localhost when empty
		advance  time.Duration
		status   int
		typ      string
	}{
		{"another account's certificate", otherKey, otherKID, id, "", 0, 403, ErrUnauthorized},
		{"not a certificate ID", cl.Key, acct.URI, "garbage", "", 0, 400, ErrMalformed},
		{"another CA's key identifier", cl.Key, acct.URI, b64([]byte("other")) + "." + b64(serialOctets(leaf)), "", 0, 400, ErrMalformed},
		{"a certificate for none of the order's names", cl.Key, acct.URI, id, "web1.svc.example.com", 0, 400, ErrMalformed},
		{"its own certificate", cl.Key, acct.URI, id, "", 0, 201, ""},
		{"a certificate a pending order replaces", cl.Key, acct.URI, id, "", 0, 409, ErrAlreadyReplaced},
		{"a certificate an expired order replaced", cl.Key, acct.URI, id, "", DefaultOrderLifetime + time.Second, 201, ""},
	} {
		h.f.Clock.Advance(tc.advance)
		ident := cmp.Or(tc.ident, "localhost")
		st, typ, body := h.post(t, newOrderPath, rawPost{key: tc.key.(crypto.Signer), kid: tc.kid, payload: order(ident, tc.rep)})
		if st != tc.status || typ != tc.typ {
			t.Errorf("replaces %s = %d %s; want %d %s\n%s", tc.name, st, typ, tc.status, tc.typ, body)
		}
		if st == 201 && !strings.Contains(string(body), `"replaces":"`+id+`"`) {
			t.Errorf("the order does not echo replaces: %s", body)
		}
	}
}

// TestIssuerProblem: a CA revoked at its root answers serverInternal with
// ca's words (naming the CA and its successor); other errors pass as they
// are.
func TestIssuerProblem(t *testing.T) {
	revoked := fmt.Errorf("%w (CN=Issuing 1, serial 01): it issues no more certificates; order from the CA that succeeds it", ca.ErrACMECARevoked)
	var pr *problem
	if err := issuerProblem(revoked); !errors.As(err, &pr) || pr.Status != http.StatusInternalServerError ||
		pr.Type != errNS+ErrServerInternal || !strings.Contains(pr.Detail, "succeeds it") {
		t.Errorf("issuerProblem(a revoked CA) = %#v; want a 500 serverInternal with ca's detail", err)
	}
	other := errors.New("disk full")
	if err := issuerProblem(other); err != other {
		t.Errorf("issuerProblem(another error) = %v; want it unchanged", err)
	}
}
