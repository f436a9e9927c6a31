package acme

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	xacme "golang.org/x/crypto/acme"

	"minica/ca"
)

// TestOrderWholeWay: an account made with a binding orders a DNS name
// and an IP, validates http-01 for real, finalizes and downloads a chain
// that verifies; the record names the account; the account revokes it,
// the renewal window moves to now, and a second revoke is alreadyRevoked.
func TestOrderWholeWay(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := h.binding(t, "web", ca.ACMEPolicy{DNSNames: []string{"localhost"}, IPRanges: mustPrefixes("127.0.0.0/8")})
	cl := h.client(t)
	acct, err := h.register(t, cl, b)
	if err != nil {
		t.Fatal(err)
	}
	key := newKey(t)
	der, err := h.obtain(t, cl, key, xacme.DomainIDs("localhost")[0], xacme.IPIDs("127.0.0.1")[0])
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(h.f.CA.Cert)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: h.f.Clock.Now(), DNSName: "localhost"}); err != nil {
		t.Errorf("the certificate does not verify against the CA: %v", err)
	}
	if len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("IP SANs = %v; want 127.0.0.1", leaf.IPAddresses)
	}
	if got := leaf.NotAfter.Sub(leaf.NotBefore); got > ca.DefaultACMELifetime+time.Hour {
		t.Errorf("lifetime = %s; want at most the default %s", got, ca.DefaultACMELifetime)
	}
	rec, err := h.f.CA.Record(leaf.SerialNumber)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(acct.URI, "/"+rec.ACMEAccount) || rec.ACMEAccount == "" {
		t.Errorf("the record's account = %q; want the one of %s", rec.ACMEAccount, acct.URI)
	}
	start, _ := h.renewalWindow(t, leaf)
	if !start.After(h.f.Clock.Now()) {
		t.Errorf("a fresh certificate's window starts at %s, not after now", start)
	}
	if err := cl.RevokeCert(context.Background(), nil, der[0], xacme.CRLReasonKeyCompromise); err != nil {
		t.Fatal(err)
	}
	if rec, _ = h.f.CA.Record(leaf.SerialNumber); rec.Status != ca.StatusRevoked || rec.Reason != "keyCompromise" {
		t.Errorf("after revokeCert the record is %s %s; want revoked keyCompromise", rec.Status, rec.Reason)
	}
	// Wholly in the past: a client of RFC 9773 section 4.2 picks a moment
	// in the window and renews at once when it has passed.
	if _, end := h.renewalWindow(t, leaf); end.After(h.f.Clock.Now()) {
		t.Errorf("a revoked certificate's window ends at %s; want in the past", end)
	}
	// x/crypto/acme takes alreadyRevoked for success: ask by hand.
	again := []byte(`{"certificate":"` + b64(der[0]) + `"}`)
	if st, typ, _ := h.post(t, revokePath, rawPost{key: cl.Key, kid: acct.URI, payload: again}); st != 400 || typ != ErrAlreadyRevoked {
		t.Errorf("a second revokeCert = %d %s; want 400 alreadyRevoked", st, typ)
	}
}

// renewalWindow reads the renewal information of leaf.
func (h *harness) renewalWindow(t *testing.T, leaf *x509.Certificate) (time.Time, time.Time) {
	t.Helper()
	id := b64(leaf.AuthorityKeyId) + "." + b64(serialOctets(leaf))
	resp, err := h.ts.Client().Get(h.ts.URL + renewalPath + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info renewalInfo
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("renewal information = %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	return info.SuggestedWindow.Start, info.SuggestedWindow.End
}

// serialOctets are the content octets of the DER INTEGER of a serial.
func serialOctets(c *x509.Certificate) []byte {
	b := c.SerialNumber.Bytes()
	if b[0]&0x80 != 0 {
		b = append([]byte{0}, b...)
	}
	return b
}

// TestExternalAccountBinding: without a binding newAccount is refused
// with externalAccountRequired; a wrong MAC or unknown key ID with
// unauthorized; a binding good for one account refuses a second; the
// same key registering again gets its account back.
func TestExternalAccountBinding(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := h.binding(t, "web", ca.ACMEPolicy{DNSNames: []string{"localhost"}})
	if _, err := h.register(t, h.client(t), nil); acmeErr(err) != ErrExternalAccountRequired {
		t.Errorf("newAccount without a binding = %v; want externalAccountRequired", err)
	}
	wrong := *b
	wrong.HMACKey = append([]byte(nil), b.HMACKey...)
	wrong.HMACKey[0] ^= 1
	if _, err := h.register(t, h.client(t), &wrong); acmeErr(err) != ErrUnauthorized {
		t.Errorf("newAccount with a wrong MAC = %v; want unauthorized", err)
	}
	unknown := *b
	unknown.KeyID = "nosuchkey"
	if _, err := h.register(t, h.client(t), &unknown); acmeErr(err) != ErrUnauthorized {
		t.Errorf("newAccount with an unknown key ID = %v; want unauthorized", err)
	}
	cl := h.client(t)
	first, err := h.register(t, cl, b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.register(t, cl, b)
	if err != nil && !errors.Is(err, xacme.ErrAccountAlreadyExists) {
		t.Fatalf("the same key registering again: %v", err)
	}
	if again != nil && again.URI != first.URI {
		t.Errorf("the same key got account %s, then %s", first.URI, again.URI)
	}
	if _, err := h.register(t, h.client(t), b); acmeErr(err) != ErrUnauthorized {
		t.Errorf("a second account with a one-account binding = %v; want unauthorized", err)
	}
	if n := countObjects(t, h, kindAccount); n != 1 {
		t.Errorf("the store holds %d accounts; want 1", n)
	}
}

// TestNoEAB: --acme-no-eab takes accounts without a binding and says so
// in the directory.
func TestNoEAB(t *testing.T) {
	h := newHarness(t, harnessOptions{noEAB: true})
	cl := h.client(t)
	if _, err := h.register(t, cl, nil); err != nil {
		t.Fatalf("newAccount without a binding under NoEAB: %v", err)
	}
	d, err := cl.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.ExternalAccountRequired {
		t.Error("the directory says externalAccountRequired under NoEAB")
	}
	if _, err := h.obtain(t, cl, newKey(t), xacme.DomainIDs("localhost")...); err != nil {
		t.Errorf("an order under NoEAB: %v", err)
	}
}

// TestRejectedIdentifier: a name outside the binding is refused at
// newOrder, and so is a name that merely ends like an allowed suffix.
func TestRejectedIdentifier(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := h.binding(t, "web", ca.ACMEPolicy{DNSSuffixes: []string{"svc.example.com"}})
	cl := h.client(t)
	if _, err := h.register(t, cl, b); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"other.example.com", "evilsvc.example.com", "localhost"} {
		_, err := cl.AuthorizeOrder(context.Background(), xacme.DomainIDs(name))
		if acmeErr(err) != ErrRejectedIdentifier {
			t.Errorf("an order for %s = %v; want rejectedIdentifier", name, err)
		}
	}
	if _, err := cl.AuthorizeOrder(context.Background(), xacme.DomainIDs("web1.svc.example.com")); err != nil {
		t.Errorf("an order for a name of the suffix: %v", err)
	}
}

// TestFinalizeRefusesBadCSRs: a CSR with a name not in the order, one
// missing a name, a weak key and one asking for CA:TRUE are badCSR, and
// the order stays ready: a good CSR then gets the certificate.
func TestFinalizeRefusesBadCSRs(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := h.binding(t, "web", ca.ACMEPolicy{DNSNames: []string{"localhost"}, IPRanges: mustPrefixes("127.0.0.1/32")})
	cl := h.client(t)
	if _, err := h.register(t, cl, b); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ids := []xacme.AuthzID{{Type: "dns", Value: "localhost"}, {Type: "ip", Value: "127.0.0.1"}}
	o, err := cl.AuthorizeOrder(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range o.AuthzURLs {
		az, err := cl.GetAuthorization(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.accept(ctx, cl, az); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.WaitAuthorization(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	for name, csr := range badCSRs(t) {
		if _, _, err := cl.CreateOrderCert(ctx, o.FinalizeURL, csr, false); acmeErr(err) != ErrBadCSR {
			t.Errorf("finalize with %s = %v; want badCSR", name, err)
		}
	}
	good := csrDER(t, newKey(t), &x509.CertificateRequest{DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}})
	if _, _, err := cl.CreateOrderCert(ctx, o.FinalizeURL, good, false); err != nil {
		t.Errorf("finalize with a good CSR after the bad ones: %v", err)
	}
}

// TestRetryAfterWhileValidating: a challenge is validated within the
// POST that asks for it, so that its answer is settled; while a slow
// validation runs, the authorization says processing with a Retry-After,
// so that clients poll soon (lego otherwise waits 5 s), and none once it
// is valid.
func TestRetryAfterWhileValidating(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := h.binding(t, "web", ca.ACMEPolicy{DNSSuffixes: []string{"svc.example.com"}})
	cl := h.client(t)
	acct, err := h.register(t, cl, b)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	o, err := cl.AuthorizeOrder(ctx, xacme.DomainIDs("web1.svc.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	az, err := cl.GetAuthorization(ctx, o.AuthzURLs[0])
	if err != nil {
		t.Fatal(err)
	}
	var ch *xacme.Challenge
	for _, c := range az.Challenges {
		if c.Type == "http-01" {
			ch = c
		}
	}
	ka, err := cl.HTTP01ChallengeResponse(ch.Token)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	h.answers.Store(ch.Token, slowAnswer{ka, release})
	path := func(u string) string { return strings.TrimPrefix(u, h.ts.URL) }
	type reply struct {
		resp *http.Response
		body []byte
	}
	posted := make(chan reply, 1)
	go func() {
		resp, body := h.postResponse(t, path(ch.URI), rawPost{key: cl.Key, kid: acct.URI, payload: []byte("{}")})
		posted <- reply{resp, body}
	}()
	// The validation waits on the responder: the authorization is
	// processing meanwhile.
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, body := h.postResponse(t, path(az.URI), rawPost{key: cl.Key, kid: acct.URI})
		if strings.Contains(string(body), `"processing"`) {
			if got, want := resp.Header.Get("Retry-After"), strconvSeconds(DefaultValidationRetry); got != want {
				t.Errorf("the authorization being validated: Retry-After %q; want %q", got, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the authorization never showed processing: %s", body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	if got := <-posted; got.resp.StatusCode != 200 || !strings.Contains(string(got.body), `"valid"`) {
		t.Fatalf("POST {} to the challenge = %d %s; want 200, valid (validated within the request)", got.resp.StatusCode, got.body)
	}
	for _, u := range []string{ch.URI, az.URI} {
		resp, body := h.postResponse(t, path(u), rawPost{key: cl.Key, kid: acct.URI})
		if resp.StatusCode != 200 || resp.Header.Get("Retry-After") != "" {
			t.Errorf("POST-as-GET %s once valid = %d, Retry-After %q; want 200 without\n%s", path(u), resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
}
