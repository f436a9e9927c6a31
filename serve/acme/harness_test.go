package acme

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	xacme "golang.org/x/crypto/acme"

	"minica/ca"
	"minica/serve/acme/internal/dnstest"
	"minica/serve/acme/validate"
	"minica/serve/internal/servetest"
)

// harness is an ACME Server of a test CA behind an HTTPS test server,
// with an http-01 responder on 127.0.0.1 that the validator (allowed to
// reach 127.0.0.1) asks.
type harness struct {
	f       *servetest.Fixture
	srv     *Server
	ts      *httptest.Server
	dirURL  string
	answers sync.Map // http-01 token -> key authorization
	alpn    sync.Map // tls-alpn-01 server name -> *tls.Certificate
	dns     *dnstest.Server
}

type harnessOptions struct {
	noEAB bool
	// tlsALPN starts a tls-alpn-01 responder that the validator asks.
	tlsALPN bool
	// replicas, when above 1, puts that many Servers, each on a CA handle
	// of its own, behind the one HTTPS server, taking requests in turn.
	replicas int
}

func newHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	h := &harness{f: servetest.NewFixture(t)}
	chal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := strings.TrimPrefix(r.URL.Path, "/.well-known/acme-challenge/")
		if v, ok := h.answers.Load(token); ok {
			w.Write([]byte(v.(string)))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(chal.Close)
	_, port, _ := net.SplitHostPort(chal.Listener.Addr().String())
	httpPort, _ := strconv.Atoi(port)
	h.dns = dnstest.Start(t, dnstest.Zone{A: map[string]netip.Addr{
		"localhost":            netip.MustParseAddr("127.0.0.1"),
		"web1.svc.example.com": netip.MustParseAddr("127.0.0.1"),
	}})
	tlsPort := 1
	if o.tlsALPN {
		tlsPort = h.startALPN(t)
	}
	v, err := validate.New(validate.Config{HTTPPort: httpPort, TLSPort: tlsPort, Resolver: h.dns.Addr,
		Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Total: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var servers []http.Handler
	for range max(o.replicas, 1) {
		srv, err := New(Config{CA: h.f.Other(t), Signer: h.f.Signer, Validator: v, NoEAB: o.noEAB, Log: h.f.Log, Now: h.f.Clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		servers = append(servers, srv)
	}
	h.srv = servers[0].(*Server)
	var turn atomic.Uint64
	h.ts = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		servers[int(turn.Add(1))%len(servers)].ServeHTTP(w, r)
	}))
	t.Cleanup(h.ts.Close)
	h.dirURL = h.ts.URL + DirectoryPath
	return h
}

// binding makes a binding named name with policy p through the CA.
func (h *harness) binding(t *testing.T, name string, p ca.ACMEPolicy) *ca.ACMEBinding {
	t.Helper()
	c := h.f.Other(t)
	unlock, err := c.Lock(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	b, err := c.CreateACMEBinding(name, p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// client is an ACME client with a new P-256 account key.
func (h *harness) client(t *testing.T) *xacme.Client {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &xacme.Client{Key: key, DirectoryURL: h.dirURL, HTTPClient: h.ts.Client()}
}

// register creates the client's account with the binding b (none when
// nil).
func (h *harness) register(t *testing.T, cl *xacme.Client, b *ca.ACMEBinding) (*xacme.Account, error) {
	t.Helper()
	acct := &xacme.Account{Contact: []string{"mailto:ops@example.com"}}
	if b != nil {
		acct.ExternalAccountBinding = &xacme.ExternalAccountBinding{KID: b.KeyID, Key: b.HMACKey}
	}
	return cl.Register(context.Background(), acct, xacme.AcceptTOS)
}

// obtain runs a whole order for ids with http-01 and returns the chain.
func (h *harness) obtain(t *testing.T, cl *xacme.Client, key crypto.Signer, ids ...xacme.AuthzID) ([][]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o, err := cl.AuthorizeOrder(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, u := range o.AuthzURLs {
		az, err := cl.GetAuthorization(ctx, u)
		if err != nil {
			return nil, err
		}
		if err := h.accept(ctx, cl, az); err != nil {
			return nil, err
		}
		if _, err := cl.WaitAuthorization(ctx, u); err != nil {
			return nil, err
		}
	}
	if o, err = cl.WaitOrder(ctx, o.URI); err != nil {
		return nil, err
	}
	tmpl := &x509.CertificateRequest{}
	for _, id := range ids {
		if id.Type == "ip" {
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(id.Value))
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, id.Value)
		}
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	der, _, err := cl.CreateOrderCert(ctx, o.FinalizeURL, csr, true)
	return der, err
}

// accept answers the http-01 challenge of az and tells the server.
func (h *harness) accept(ctx context.Context, cl *xacme.Client, az *xacme.Authorization) error {
	return h.acceptType(ctx, cl, az, "http-01")
}

// acceptType answers the challenge of type typ of az (http-01,
// tls-alpn-01 or dns-01) and tells the server.
func (h *harness) acceptType(ctx context.Context, cl *xacme.Client, az *xacme.Authorization, typ string) error {
	for _, ch := range az.Challenges {
		if ch.Type != typ {
			continue
		}
		switch typ {
		case "http-01":
			ka, err := cl.HTTP01ChallengeResponse(ch.Token)
			if err != nil {
				return err
			}
			h.answers.Store(ch.Token, ka)
		case "tls-alpn-01":
			cert, err := cl.TLSALPN01ChallengeCert(ch.Token, az.Identifier.Value)
			if err != nil {
				return err
			}
			h.alpn.Store(az.Identifier.Value, &cert)
		case "dns-01":
			rec, err := cl.DNS01ChallengeRecord(ch.Token)
			if err != nil {
				return err
			}
			h.dns.SetTXT("_acme-challenge."+az.Identifier.Value, rec)
		}
		_, err := cl.Accept(ctx, ch)
		return err
	}
	return fmt.Errorf("no %s challenge offered for %s", typ, az.Identifier.Value)
}

// startALPN serves tls-alpn-01 certificates of h.alpn on 127.0.0.1 and
// returns the port.
func (h *harness) startALPN(t *testing.T) int {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{NextProtos: []string{"acme-tls/1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c, ok := h.alpn.Load(hello.ServerName); ok {
				return c.(*tls.Certificate), nil
			}
			return nil, fmt.Errorf("no certificate for %q", hello.ServerName)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				c.(*tls.Conn).Handshake()
				c.Close()
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func newKey(t *testing.T) crypto.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// acmeErr returns the ACME error type of err (without the namespace).
func acmeErr(err error) string {
	if e, ok := err.(*xacme.Error); ok {
		return strings.TrimPrefix(e.ProblemType, errNS)
	}
	return ""
}
