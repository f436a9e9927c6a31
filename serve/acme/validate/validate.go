package validate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// Config of a Validator; zero values take the defaults.
type Config struct {
	HTTPPort int // port of http-01, default 80
	TLSPort  int // port of tls-alpn-01 and of https redirects, default 443
	// Resolver is the "host:port" of the DNS server that answers for
	// names and for the TXT records of dns-01; "" is the system's.
	Resolver string
	// Allow are ranges allowed although DefaultRefused refuses them,
	// e.g. 127.0.0.1/32 in tests. Give IPv4 ranges in IPv4 form.
	Allow []netip.Prefix
	// ConnectTimeout bounds one TCP connect (default 5s), TLSTimeout one
	// TLS handshake (default 5s), Total one whole validation with its
	// redirects and lookups (default 10s).
	ConnectTimeout, TLSTimeout, Total time.Duration

	MaxRedirects int   // redirects followed by http-01, default 10
	MaxBody      int64 // bytes of an http-01 answer, default 8 KiB; more is an error
}

// The defaults of Config.
const (
	DefaultHTTPPort       = 80
	DefaultTLSPort        = 443
	DefaultConnectTimeout = 5 * time.Second
	DefaultTLSTimeout     = 5 * time.Second
	DefaultTotal          = 10 * time.Second
	DefaultMaxRedirects   = 10
	DefaultMaxBody        = 8 << 10
)

// Validator validates ACME challenges. It is safe for concurrent use.
type Validator struct {
	cfg      Config
	allow    []netip.Prefix
	refused  []netip.Prefix
	resolver *net.Resolver
	dialer   *net.Dialer
	client   *http.Client
}

// Identifier is the identifier of an authorization: Type "dns" (Value a
// name, "*.name" for a wildcard) or "ip" (Value an IPv4 or IPv6 address).
type Identifier struct {
	Type, Value string
}

// New returns a Validator with cfg, its zero fields set to the defaults.
// It fails on a negative number, a port out of range, an invalid Allow
// prefix or a Resolver that is not "host:port".
func New(cfg Config) (*Validator, error) {
	cfg, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	v := &Validator{cfg: cfg, refused: DefaultRefused()}
	for _, p := range cfg.Allow {
		v.allow = append(v.allow, p.Masked())
	}
	v.resolver = newResolver(cfg)
	v.dialer = &net.Dialer{Timeout: cfg.ConnectTimeout, Resolver: v.resolver, ControlContext: v.control}
	v.client = v.newHTTPClient()
	return v, nil
}

func withDefaults(c Config) (Config, error) {
	if c.HTTPPort < 0 || c.HTTPPort > 65535 || c.TLSPort < 0 || c.TLSPort > 65535 {
		return c, fmt.Errorf("validate: ports %d and %d: want 1 to 65535, or 0 for the default", c.HTTPPort, c.TLSPort)
	}
	if c.ConnectTimeout < 0 || c.TLSTimeout < 0 || c.Total < 0 || c.MaxRedirects < 0 || c.MaxBody < 0 {
		return c, errors.New("validate: negative timeout, MaxRedirects or MaxBody")
	}
	for _, p := range c.Allow {
		if !p.IsValid() {
			return c, fmt.Errorf("validate: Allow holds an invalid prefix %v", p)
		}
	}
	if c.Resolver != "" {
		if _, _, err := net.SplitHostPort(c.Resolver); err != nil {
			return c, fmt.Errorf("validate: Resolver %q: want host:port: %w", c.Resolver, err)
		}
	}
	setDefault(&c.HTTPPort, DefaultHTTPPort)
	setDefault(&c.TLSPort, DefaultTLSPort)
	setDefault(&c.ConnectTimeout, DefaultConnectTimeout)
	setDefault(&c.TLSTimeout, DefaultTLSTimeout)
	setDefault(&c.Total, DefaultTotal)
	setDefault(&c.MaxRedirects, DefaultMaxRedirects)
	setDefault(&c.MaxBody, DefaultMaxBody)
	return c, nil
}

func setDefault[T comparable](field *T, def T) {
	var zero T
	if *field == zero {
		*field = def
	}
}

// newResolver is Go's own resolver (cancellable by the context, unlike
// the C library's), sent to cfg.Resolver when set.
func newResolver(cfg Config) *net.Resolver {
	r := &net.Resolver{PreferGo: true}
	if cfg.Resolver != "" {
		d := &net.Dialer{Timeout: cfg.ConnectTimeout}
		r.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, cfg.Resolver)
		}
	}
	return r
}

// bound is ctx limited to the total time of one validation.
func (v *Validator) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, v.cfg.Total, errTotal)
}

// dial connects to addr ("host:port") through the address policy. A name
// is made absolute first, so that the search domains of resolv.conf never
// turn it into another name.
func (v *Validator) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if _, err := netip.ParseAddr(host); err != nil && !strings.HasSuffix(host, ".") {
		addr = net.JoinHostPort(host+".", port)
	}
	return v.dialer.DialContext(ctx, network, addr)
}
