package signin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// retryEvery is how long after a failed discovery the next sign-in may
// try again; meanwhile the failure is answered at once.
const retryEvery = 5 * time.Second

// maxProviderBody bounds every answer of the provider (discovery, keys,
// tokens): none is near this size.
const maxProviderBody = 1 << 20

// errProviderDown is matched by the errors of a provider that could not
// be reached, or answered too slowly.
var errProviderDown = errors.New("identity provider unreachable")

// provider is the identity provider as discovered, on first use.
type provider struct {
	cfg    *Config
	client *http.Client

	mu       sync.Mutex
	op       *oidc.Provider
	oauth    *oauth2.Config
	verifier *oidc.IDTokenVerifier
	lastTry  time.Time
	lastErr  error
}

func newProvider(cfg *Config) *provider {
	base := http.RoundTripper(http.DefaultTransport)
	if cfg.HTTPClient != nil && cfg.HTTPClient.Transport != nil {
		base = cfg.HTTPClient.Transport
	} else if cfg.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: cfg.ProviderTimeout}).DialContext
		tr.TLSHandshakeTimeout = cfg.ProviderTimeout
		tr.ResponseHeaderTimeout = cfg.ProviderTimeout
		base = tr
	}
	return &provider{cfg: cfg, client: &http.Client{Timeout: cfg.ProviderTimeout, Transport: limitedBodies{base}}}
}

// limitedBodies cuts every answer's body at maxProviderBody.
type limitedBodies struct{ rt http.RoundTripper }

func (l limitedBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(r)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, maxProviderBody), resp.Body}
	}
	return resp, err
}

// context returns a context for a call to the provider: bounded by
// ProviderTimeout, carrying the bounded client to go-oidc and oauth2.
func (p *provider) context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, p.cfg.ProviderTimeout)
	ctx = oidc.ClientContext(ctx, p.client)
	return context.WithValue(ctx, oauth2.HTTPClient, p.client), cancel
}

// get returns the discovered provider, discovering it when it is not yet
// (at most one try every retryEvery); an error matches errProviderDown.
func (p *provider) get(parent context.Context) (*oauth2.Config, *oidc.IDTokenVerifier, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.op != nil {
		return p.oauth, p.verifier, nil
	}
	now := p.cfg.Now()
	if p.lastErr != nil && now.Sub(p.lastTry) < retryEvery {
		return nil, nil, p.lastErr
	}
	p.lastTry = now
	ctx, cancel := p.context(parent)
	defer cancel()
	op, err := oidc.NewProvider(ctx, p.cfg.Issuer)
	if err != nil {
		p.lastErr = fmt.Errorf("%w: discovering %s: %w", errProviderDown, p.cfg.Issuer, err)
		return nil, nil, p.lastErr
	}
	p.op, p.lastErr = op, nil
	p.oauth = &oauth2.Config{
		ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret, RedirectURL: p.cfg.RedirectURL,
		Endpoint: op.Endpoint(), Scopes: append([]string{oidc.ScopeOpenID, "email", "profile"}, p.cfg.Scopes...),
	}
	p.verifier = op.Verifier(&oidc.Config{ClientID: p.cfg.ClientID, Now: p.cfg.Now})
	return p.oauth, p.verifier, nil
}
