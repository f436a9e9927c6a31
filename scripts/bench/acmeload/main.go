// Command acmeload is the load generator of scripts/bench/acme.sh: N
// concurrent ACME clients (golang.org/x/crypto/acme), each with an account
// of its own, order certificates the whole way: new order, http-01
// validated for real by the server, finalize with a fresh P-256 CSR,
// download of the chain. It answers http-01 itself on 127.0.0.1:-http-port
// (one responder for every client: token -> key authorization).
//
// The clients poll pending objects every -poll instead of sleeping the
// Retry-After a server suggests, so that the figures are the server's and
// not the pause it asks for. A finalize answered "processing" (Pebble) is
// followed the same way.
//
// It prints one line of results, key=value, space-separated: clients,
// certs, errors, reused (orders the server did not validate, not counted
// as certificates), wall (s), rate (certificates a second), p50, p99 and
// max (ms from new order to the chain downloaded), http01 (validation
// requests answered), requests (to the ACME server, registration
// excluded); then the first errors, one per line on stderr. It exits 1
// when an order failed.
//
//	acmeload -dir https://127.0.0.1:8443/acme/directory -ca ca.crt -http-port 5002 \
//	    -n 10 -orders 1000 [-duration 60s] [-eab-kid KID -eab-hmac KEY] [-ip 127.0.0.1]
package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/acme"
)

type config struct {
	dir       string
	n         int
	orders    int
	duration  time.Duration
	poll      time.Duration
	timeout   time.Duration
	ip        string
	eabKID    string
	eabKey    []byte
	httpCl    *http.Client
	processng *sync.Map // finalize URL -> *signal: the server answered "processing"
}

func main() {
	dir := flag.String("dir", "", "the ACME directory URL")
	caFile := flag.String("ca", "", "the CA certificates (PEM) the server's HTTPS certificate chains to")
	n := flag.Int("n", 1, "concurrent clients, one account each")
	orders := flag.Int("orders", 100, "stop after this many orders in all (done or failed)")
	duration := flag.Duration("duration", 10*time.Minute, "and stop starting orders after this long")
	poll := flag.Duration("poll", 5*time.Millisecond, "pause between two polls of a pending authorization or order")
	timeout := flag.Duration("timeout", 60*time.Second, "give up on one order after this long (counted as an error)")
	httpPort := flag.Int("http-port", 5002, "answer http-01 on 127.0.0.1:`PORT`")
	ip := flag.String("ip", "127.0.0.1", "the IP identifier to order (http-01 reaches it at -http-port)")
	eabKID := flag.String("eab-kid", "", "external account binding key ID")
	eabHMAC := flag.String("eab-hmac", "", "external account binding HMAC key, base64url")
	accounts := flag.Int("accounts", 0, "first register this many more accounts, n at a time, that order nothing")
	flag.Parse()
	if *dir == "" || *caFile == "" || *n < 1 || *n > 1000 || *orders < 1 || *orders > 10_000_000 ||
		*accounts < 0 || *accounts > 10_000_000 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "acmeload: -dir and -ca are required; -n from 1 to 1000, -orders from 1 to 10^7, -accounts from 0 to 10^7")
		os.Exit(2)
	}
	if _, err := netip.ParseAddr(*ip); err != nil {
		fail("-ip %q: %v", *ip, err)
	}
	cfg := &config{dir: *dir, n: *n, orders: *orders, duration: *duration, poll: *poll, timeout: *timeout,
		ip: *ip, eabKID: *eabKID, processng: &sync.Map{}}
	if *eabKID != "" {
		key, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(*eabHMAC, "="))
		if err != nil || len(key) == 0 {
			fail("-eab-hmac: want the HMAC key in base64url")
		}
		cfg.eabKey = key
	}
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		fail("%v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		fail("no certificate in %s", *caFile)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, MaxIdleConnsPerHost: *n,
		ForceAttemptHTTP2: false, TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: *timeout}
	cfg.httpCl = &http.Client{Transport: &finalizeWatch{next: tr, cfg: cfg}, Timeout: *timeout}

	answers := &sync.Map{}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*httpPort)))
	if err != nil {
		fail("http-01 responder: %v", err)
	}
	var served atomic.Int64
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := strings.TrimPrefix(r.URL.Path, "/.well-known/acme-challenge/")
		if v, ok := answers.Load(token); ok {
			served.Add(1)
			io.WriteString(w, v.(string))
			return
		}
		http.NotFound(w, r)
	}))

	// Every client registers first; the clock starts when all have.
	clients := make([]*acme.Client, *n)
	var wg sync.WaitGroup
	regErr := make([]error, *n)
	for i := range clients {
		wg.Go(func() { clients[i], regErr[i] = register(cfg) })
	}
	wg.Wait()
	if err := errors.Join(regErr...); err != nil {
		fail("registering: %v", err)
	}
	if err := registerMore(cfg, *accounts); err != nil {
		fail("registering %d more accounts: %v", *accounts, err)
	}

	var next atomic.Int64
	deadline := time.Now().Add(cfg.duration)
	lat := make([][]time.Duration, *n)
	var errs, reused atomic.Int64
	requests.Store(0)
	var errMu sync.Mutex
	var firstErrs []string
	start := time.Now()
	for w := range clients {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(cfg.orders) || time.Now().After(deadline) {
					return
				}
				t0 := time.Now()
				err := order(cfg, clients[w], answers)
				if errors.Is(err, errReused) {
					reused.Add(1)
					continue
				}
				if err != nil {
					errs.Add(1)
					errMu.Lock()
					if len(firstErrs) < 5 {
						firstErrs = append(firstErrs, fmt.Sprintf("client %d, order %d: %v", w, i, err))
					}
					errMu.Unlock()
					continue
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	all := slices.Concat(lat...)
	slices.Sort(all)
	ms := func(q float64) float64 {
		if len(all) == 0 {
			return 0
		}
		k := int(q*float64(len(all))+0.999999) - 1 // nearest rank
		return float64(all[max(k, 0)].Microseconds()) / 1000
	}
	fmt.Printf("clients=%d certs=%d errors=%d reused=%d wall=%.3f rate=%.2f p50=%.1f p99=%.1f max=%.1f http01=%d requests=%d accounts=%d\n",
		*n, len(all), errs.Load(), reused.Load(), wall.Seconds(), float64(len(all))/wall.Seconds(), ms(0.5), ms(0.99), ms(1),
		served.Load(), requests.Load(), *accounts)
	for _, e := range firstErrs {
		fmt.Fprintln(os.Stderr, "acmeload:", e)
	}
	if errs.Load() > 0 {
		os.Exit(1)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "acmeload: "+format+"\n", args...)
	os.Exit(2)
}

// registerMore registers count accounts, cfg.n at a time, before the
// load: the state of a server that has many.
func registerMore(cfg *config, count int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, cfg.n)
	for w := range cfg.n {
		wg.Go(func() {
			for next.Add(1) <= int64(count) {
				if _, errs[w] = register(cfg); errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// register makes a client with a new P-256 account key and its account.
func register(cfg *config) (*acme.Client, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	cl := &acme.Client{Key: key, DirectoryURL: cfg.dir, HTTPClient: cfg.httpCl, UserAgent: "minica-acmeload"}
	a := &acme.Account{}
	if cfg.eabKID != "" {
		a.ExternalAccountBinding = &acme.ExternalAccountBinding{KID: cfg.eabKID, Key: cfg.eabKey}
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	if _, err := cl.Register(ctx, a, acme.AcceptTOS); err != nil {
		return nil, err
	}
	return cl, nil
}

// order runs one order the whole way, bounded by cfg.timeout.
func order(cfg *config, cl *acme.Client, answers *sync.Map) error {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	o, err := cl.AuthorizeOrder(ctx, acme.IPIDs(cfg.ip))
	if err != nil {
		return fmt.Errorf("new order: %w", err)
	}
	for _, u := range o.AuthzURLs {
		az, err := cl.GetAuthorization(ctx, u)
		if err != nil {
			return fmt.Errorf("authorization: %w", err)
		}
		if az.Status == acme.StatusValid {
			return errReused
		}
		var ch *acme.Challenge
		for _, c := range az.Challenges {
			if c.Type == "http-01" {
				ch = c
			}
		}
		if ch == nil {
			return errors.New("no http-01 challenge offered")
		}
		ka, err := cl.HTTP01ChallengeResponse(ch.Token)
		if err != nil {
			return err
		}
		answers.Store(ch.Token, ka)
		defer answers.Delete(ch.Token)
		if _, err := cl.Accept(ctx, ch); err != nil {
			return fmt.Errorf("accepting http-01: %w", err)
		}
		if err := poll(ctx, cfg.poll, func() (bool, error) {
			az, err := cl.GetAuthorization(ctx, u)
			if err != nil {
				return false, err
			}
			switch az.Status {
			case acme.StatusValid:
				return true, nil
			case acme.StatusPending, acme.StatusProcessing:
				return false, nil
			}
			return false, fmt.Errorf("authorization %s", az.Status)
		}); err != nil {
			return fmt.Errorf("polling the authorization: %w", err)
		}
	}
	if err := poll(ctx, cfg.poll, func() (bool, error) {
		cur, err := cl.GetOrder(ctx, o.URI)
		if err != nil {
			return false, err
		}
		switch cur.Status {
		case acme.StatusReady, acme.StatusValid:
			return true, nil
		case acme.StatusPending, acme.StatusProcessing:
			return false, nil
		}
		return false, fmt.Errorf("order %s", cur.Status)
	}); err != nil {
		return fmt.Errorf("polling the order: %w", err)
	}
	csr, err := newCSR(cfg.ip)
	if err != nil {
		return err
	}
	return finalize(ctx, cfg, cl, o, csr)
}

// finalize finalizes o and downloads its chain. x/crypto/acme's
// CreateOrderCert sleeps Retry-After (at least a second) when the server
// answers "processing"; then the order is polled every cfg.poll here, and
// the chain fetched as soon as it is valid.
func finalize(ctx context.Context, cfg *config, cl *acme.Client, o *acme.Order, csr []byte) error {
	processing := &signal{c: make(chan struct{})}
	cfg.processng.Store(o.FinalizeURL, processing)
	defer cfg.processng.Delete(o.FinalizeURL)
	fctx, fcancel := context.WithCancel(ctx)
	defer fcancel()
	type result struct {
		der [][]byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		der, _, err := cl.CreateOrderCert(fctx, o.FinalizeURL, csr, true)
		done <- result{der, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return fmt.Errorf("finalize: %w", r.err)
		}
		return checkChain(r.der)
	case <-processing.c:
	}
	var certURL string
	err := poll(ctx, cfg.poll, func() (bool, error) {
		cur, err := cl.GetOrder(ctx, o.URI)
		if err != nil {
			return false, err
		}
		switch cur.Status {
		case acme.StatusValid:
			certURL = cur.CertURL
			return true, nil
		case acme.StatusProcessing, acme.StatusReady:
			return false, nil
		}
		return false, fmt.Errorf("order %s", cur.Status)
	})
	fcancel()
	<-done
	if err != nil {
		return fmt.Errorf("polling the finalized order: %w", err)
	}
	der, err := cl.FetchCert(ctx, certURL, true)
	if err != nil {
		return fmt.Errorf("downloading: %w", err)
	}
	return checkChain(der)
}

// errReused is the error of an order whose authorization the server
// found valid already (Pebble reuses one now and then, even with
// PEBBLE_AUTHZREUSE=0): it validated nothing, so the order is counted
// apart, neither a certificate nor an error.
var errReused = errors.New("authorization already valid: the server reused one, nothing was validated")

// checkChain makes sure the download is a chain whose leaf parses.
func checkChain(der [][]byte) error {
	if len(der) < 2 {
		return fmt.Errorf("downloaded %d certificates, want the leaf and its issuer", len(der))
	}
	if _, err := x509.ParseCertificate(der[0]); err != nil {
		return fmt.Errorf("the leaf: %w", err)
	}
	return nil
}

// poll calls f every d until it is done or fails, or ctx ends.
func poll(ctx context.Context, d time.Duration, f func() (bool, error)) error {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		ok, err := f()
		if ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// newCSR makes a CSR for ip with a fresh P-256 key.
func newCSR(ip string) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{IPAddresses: []net.IP{net.ParseIP(ip)}}, key)
}

// signal is closed once.
type signal struct {
	once sync.Once
	c    chan struct{}
}

// finalizeWatch passes requests on, and signals the finalizes that a
// server answered "processing" (their URLs are in cfg.processng).
type finalizeWatch struct {
	next http.RoundTripper
	cfg  *config
}

// requests counts the requests to the server, after registration.
var requests atomic.Int64

func (f *finalizeWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	requests.Add(1)
	res, err := f.next.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost {
		return res, err
	}
	v, ok := f.cfg.processng.Load(r.URL.String())
	if !ok {
		return res, nil
	}
	body, rerr := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		return res, nil
	}
	var o struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(body, &o) == nil && o.Status == acme.StatusProcessing {
		s := v.(*signal)
		s.once.Do(func() { close(s.c) })
	}
	return res, nil
}
