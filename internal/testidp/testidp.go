package testidp

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"
)

// User is a person the provider knows. Username is also the subject (sub).
type User struct {
	Username, Password, Email string
	EmailVerified             bool
	Name                      string
	Groups                    []string
}

// Client is a relying party registered with the provider: a confidential
// web client (client_secret_basic or client_secret_post) that may use the
// authorization code flow with PKCE. Redirect URIs must match exactly.
type Client struct {
	ID, Secret   string
	RedirectURIs []string
}

// Config is what the provider knows at Start.
type Config struct {
	Users   []User
	Clients []Client
}

// Provider is a running OpenID provider. Its methods are safe for
// concurrent use.
type Provider struct {
	t         testing.TB
	issuer    string
	host      string // host:port of the issuer
	store     *store
	handler   http.Handler
	tokenPath string
	stop      chan struct{} // closed when the test ends

	down    atomic.Bool
	delay   atomic.Int64 // nanoseconds
	rewrite atomic.Pointer[func(string) string]
}

// Start runs a provider for cfg on 127.0.0.1 with a port chosen by the
// kernel, under the issuer http://localhost:PORT, until the test ends
// (t.Cleanup). A bad cfg fails the test.
func Start(t testing.TB, cfg Config) *Provider {
	t.Helper()
	if err := cfg.validate(); err != nil {
		t.Fatalf("testidp: %v", err)
	}
	s, err := newStore(cfg)
	if err != nil {
		t.Fatalf("testidp: %v", err)
	}
	srv := httptest.NewUnstartedServer(nil) // listening on 127.0.0.1:0 already
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatalf("testidp: reading the listener's port: %v", err)
	}
	p := &Provider{t: t, host: net.JoinHostPort("localhost", port), store: s, stop: make(chan struct{})}
	p.issuer = "http://" + p.host
	if err := p.build(); err != nil {
		srv.Close()
		t.Fatalf("testidp: %v", err)
	}
	srv.Config.Handler = p
	srv.Start()
	t.Cleanup(func() {
		close(p.stop) // ends delays, so Close does not wait for them
		srv.Close()
	})
	return p
}

// validate reports the first user or client that cannot be registered.
func (cfg Config) validate() error {
	seen := map[string]bool{}
	for i, u := range cfg.Users {
		if err := unique(seen, "user", "username", i, u.Username); err != nil {
			return err
		}
		if u.Password == "" {
			return fmt.Errorf("user %q: empty password", u.Username)
		}
	}
	seen = map[string]bool{}
	for i, c := range cfg.Clients {
		if err := unique(seen, "client", "ID", i, c.ID); err != nil {
			return err
		}
		switch {
		case c.Secret == "":
			return fmt.Errorf("client %q: empty secret (clients are confidential)", c.ID)
		case len(c.RedirectURIs) == 0:
			return fmt.Errorf("client %q: no redirect URI", c.ID)
		}
	}
	return nil
}

// unique checks that name, the key of the i-th kind, is set and not in
// seen, and adds it.
func unique(seen map[string]bool, kind, key string, i int, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s %d: empty %s", kind, i, key)
	case seen[name]:
		return fmt.Errorf("%s %q: listed twice", kind, name)
	}
	seen[name] = true
	return nil
}

// build makes zitadel's provider and the routes around it.
func (p *Provider) build() error {
	cfg := &op.Config{
		CodeMethodS256: true, // PKCE
		AuthMethodPost: true, // client_secret_post besides client_secret_basic
	}
	if _, err := rand.Read(cfg.CryptoKey[:]); err != nil { // encrypts access tokens
		return fmt.Errorf("making the access token key: %w", err)
	}
	// zitadel refuses http issuers unless allowed; the issuer is the
	// loopback name localhost (see Start), never a network address.
	provider, err := op.NewProvider(cfg, p.store, op.StaticIssuer(p.issuer), op.WithAllowInsecure())
	if err != nil {
		return fmt.Errorf("starting zitadel's provider: %w", err)
	}
	p.tokenPath = provider.TokenEndpoint().Relative()
	mux := http.NewServeMux()
	mux.Handle(loginPath, newLoginPage(p.store, provider))
	mux.Handle("/", provider)
	p.handler = mux
	return nil
}

// ServeHTTP applies the delay, the outage and the ID token rewrite, then
// hands the request to the provider.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.wait(r.Context()) || p.down.Load() {
		hangUp(w)
		return
	}
	if f := p.rewrite.Load(); f != nil && r.URL.Path == p.tokenPath {
		rewriteIDToken(w, r, p.handler, *f)
		return
	}
	p.handler.ServeHTTP(w, r)
}

// wait sleeps the configured delay; false if the request or the test ended
// first.
func (p *Provider) wait(ctx context.Context) bool {
	d := time.Duration(p.delay.Load())
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
	case <-p.stop:
	}
	return false
}

// hangUp closes the connection without an answer, as a crashed server
// does; 503 where the connection cannot be taken over.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "provider down", http.StatusServiceUnavailable)
		return
	}
	conn.Close()
}

// Issuer returns the issuer, exactly as discovery states it:
// http://localhost:PORT without a trailing slash.
func (p *Provider) Issuer() string { return p.issuer }

// SetDown makes every endpoint close the connection without an answer
// (true) or serve again (false).
func (p *Provider) SetDown(down bool) { p.down.Store(down) }

// SetDelay makes every answer wait d first (0: none). A wait ends early,
// without an answer, when the request's context ends or the test ends.
func (p *Provider) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// RotateKeys makes a new signing key current. The previous key stays in the
// JWKS (tokens it signed still verify); the one before it is dropped. It
// fails the test if no key can be made, so call it from the test goroutine.
func (p *Provider) RotateKeys() {
	p.t.Helper()
	if err := p.store.rotate(); err != nil {
		p.t.Fatalf("testidp: rotating keys: %v", err)
	}
}

// RewriteIDTokens makes the token endpoint answer f(id_token) in place of
// each ID token it issues (nil: off). f runs on the server's goroutine.
func (p *Provider) RewriteIDTokens(f func(idToken string) string) {
	if f == nil {
		p.rewrite.Store(nil)
		return
	}
	p.rewrite.Store(&f)
}
