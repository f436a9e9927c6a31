package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"time"

	"minica/crlsource"
	"minica/revoke"
)

// Revocations is a parsed, signature-checked CRL, as revoke.Judge takes it.
type Revocations = revoke.Revocations

// Defaults of the Config limits, used when a field is zero.
const (
	DefaultHandshakeTimeout              = 10 * time.Second
	DefaultReadHeaderTimeout             = 10 * time.Second
	DefaultIdleTimeout                   = 120 * time.Second
	DefaultMaxHeaderBytes                = 64 << 10
	DefaultUpstreamHeaderBytes           = 8 << 10
	DefaultMaxConns                      = 1024
	DefaultMaxHandshakes                 = 256
	DefaultMaxHandshakesPerSource        = 32
	DefaultBodyTimeout                   = 30 * time.Second
	DefaultBodyMinRate                   = 500
	DefaultWriteTimeout                  = 30 * time.Second
	DefaultUpstreamDialTimeout           = 5 * time.Second
	DefaultUpstreamResponseHeaderTimeout = 60 * time.Second
	DefaultExpiringSoon                  = 30 * 24 * time.Hour
)

// Config is everything a Proxy needs. The loader functions and the CRL
// source are called by New and by every Reload; they must return fresh
// data each time (re-reading files), and must be safe to call from any
// goroutine.
type Config struct {
	// Upstream is where verified requests go, as endpoint.ParseUpstream reads it:
	// "http://host:port[/path]" (or "host:port"), "https://host:port[/path]"
	// (verified against UpstreamRootCAs), or "unix:/path/to.sock" (plain
	// HTTP over a unix socket).
	Upstream string
	// UpstreamRootCAs verifies an https upstream; nil means the system roots.
	UpstreamRootCAs *x509.CertPool

	// LoadCA returns the CA bundle client certificates must chain to. A
	// bundle may hold a hierarchy: a CA of it signed by another is an
	// intermediate, and a client's path then runs up to the root.
	LoadCA func() ([]*x509.Certificate, error)
	// CRL is where the CRLs come from: files (crlsource.Files) or a URL
	// followed (a crlsource.Follower). It gives the CRL (PEM or DER) of
	// the CA, or the PEM CRLs of several CAs of the bundle, at most one
	// per CA. Every CA on a client's path below the root needs the CRL of
	// the CA above it: under an intermediate, the CRLs of the intermediate
	// and of the root. A source that brings new CRLs itself (a
	// crlsource.Followed) is followed by Serve, and each new CRL reloaded
	// at once. A crlsource.DeltaSource (a Follower) may bring delta CRLs
	// too, applied to one CA's complete CRL (see docs/proxy.md, "Delta
	// CRLs").
	CRL crlsource.Source
	// LoadCert returns the proxy's own server certificate and key.
	LoadCert func() (tls.Certificate, error)

	// CRLGrace is how long past the CRL's nextUpdate clients are still
	// accepted, with a warning logged; 0 means fail closed at nextUpdate.
	CRLGrace time.Duration
	// ReloadInterval, when positive, makes Serve call Reload that often.
	ReloadInterval time.Duration

	// Profile is the header profile (see identity.Profiles); "" means
	// "minica".
	Profile string
	// CustomHeaders are extra "NAME=FIELD" headers (see
	// identity.FieldNames).
	CustomHeaders []string

	// PolicyFile, when set, is the policy file (see policy.Parse and
	// docs/proxy.md, "Routes and policy"): routes by host and path, each
	// with its upstream and rule, re-read on every Reload. It excludes
	// Upstream, UpstreamRootCAs and the Allow lists, which are a policy of
	// one route for every host and path (policy.OneRoute).
	PolicyFile string

	// StandardForwarding forwards every request with httputil.ReverseProxy
	// and net/http's Transport. Without it, a request without a body to a
	// plain http upstream goes the direct way, a faster twin of theirs
	// with the same semantics (see package proxy/internal/h1direct).
	StandardForwarding bool

	// AllowCN, AllowEmail, AllowOU and AllowURI, when any is non-empty,
	// let through only clients matching at least one entry exactly (CN;
	// email as in identity.Identity.Email or any rfc822Name SAN; any OU;
	// any URI SAN). Others get 403 "client not allowed".
	AllowCN, AllowEmail, AllowOU, AllowURI []string

	// Limits; a zero value means the matching Default constant.
	HandshakeTimeout              time.Duration // TLS handshake, from accept
	ReadHeaderTimeout             time.Duration // request headers (slowloris)
	IdleTimeout                   time.Duration // keep-alive idle connections
	MaxHeaderBytes                int           // inbound request headers, 431 beyond
	UpstreamHeaderBytes           int           // inbound plus identity headers, 431 beyond
	MaxConns                      int           // client connections past their handshake; more wait in the backlog (RefusalPage: see tlsListener)
	MaxHandshakes                 int           // connections in their TLS handshake; the oldest idle one is closed beyond
	MaxHandshakesPerSource        int           // of those, from one IPv4 address or IPv6 /64; more are closed at once
	BodyTimeout                   time.Duration // request body: the wait for it, plus 1s per BodyMinRate bytes read, 408 beyond
	BodyMinRate                   int           // request body: bytes per second that earn one more second of BodyTimeout
	WriteTimeout                  time.Duration // one write to the client (at most 16 KiB), reset (HTTP/2: stream reset) beyond
	UpstreamDialTimeout           time.Duration // connecting to the upstream, 504 beyond
	UpstreamResponseHeaderTimeout time.Duration // upstream response headers, 504 beyond
	// ExpiringSoon is the window of the client-certificates-expiring metric.
	ExpiringSoon time.Duration

	// Refusal is how a client refused for its certificate learns why:
	// RefusalAlert ("" too) ends the handshake with a TLS alert,
	// RefusalPage lets the handshake through and answers every request
	// with a refusal page (see refusal.go). HelpURL, with RefusalPage
	// only, is an absolute http(s) URL each page links to.
	Refusal, HelpURL string

	// CRLExpiredHint is what an operator should do about a CRL past its
	// nextUpdate, logged as hint= with crl-grace-warning and
	// crl-expired-error; "" logs none. The proxy names no command: the
	// caller, which knows where the CRL comes from, chooses the words.
	CRLExpiredHint string

	// Log receives the access log and event lines (see doc.go); nil means
	// io.Discard.
	Log io.Writer
	// LogFormat is the format of Log's lines: LogText ("" means it) or
	// LogJSON.
	LogFormat string
	// Now is the clock for certificate and CRL validity; nil means time.Now.
	Now func() time.Time

	// parseCRLFile reads what CRL gives; nil means revoke.ParseCRLFile.
	// Tests count its calls.
	parseCRLFile func(data []byte, cas []*x509.Certificate) ([]revoke.IssuedCRL, error)
	// parseDelta reads a delta CRL; nil means revoke.ParseDelta.
	parseDelta func(data []byte, issuer *x509.Certificate) (*revoke.CRL, error)
}

// checkLimits rejects negative limits, which have no meaning.
func (c *Config) checkLimits() error {
	durations := []struct {
		name string
		d    time.Duration
	}{
		{"CRLGrace", c.CRLGrace}, {"ReloadInterval", c.ReloadInterval},
		{"HandshakeTimeout", c.HandshakeTimeout}, {"ReadHeaderTimeout", c.ReadHeaderTimeout},
		{"IdleTimeout", c.IdleTimeout}, {"UpstreamDialTimeout", c.UpstreamDialTimeout},
		{"UpstreamResponseHeaderTimeout", c.UpstreamResponseHeaderTimeout}, {"ExpiringSoon", c.ExpiringSoon},
		{"BodyTimeout", c.BodyTimeout}, {"WriteTimeout", c.WriteTimeout},
	}
	for _, d := range durations {
		if d.d < 0 {
			return fmt.Errorf("config: %s must not be negative (%s)", d.name, d.d)
		}
	}
	sizes := []struct {
		name string
		n    int
	}{
		{"MaxHeaderBytes", c.MaxHeaderBytes}, {"UpstreamHeaderBytes", c.UpstreamHeaderBytes}, {"MaxConns", c.MaxConns},
		{"MaxHandshakes", c.MaxHandshakes}, {"MaxHandshakesPerSource", c.MaxHandshakesPerSource}, {"BodyMinRate", c.BodyMinRate},
	}
	for _, s := range sizes {
		if s.n < 0 {
			return fmt.Errorf("config: %s must not be negative (%d)", s.name, s.n)
		}
	}
	return nil
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	def(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	def(&c.UpstreamDialTimeout, DefaultUpstreamDialTimeout)
	def(&c.UpstreamResponseHeaderTimeout, DefaultUpstreamResponseHeaderTimeout)
	def(&c.ExpiringSoon, DefaultExpiringSoon)
	def(&c.BodyTimeout, DefaultBodyTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	defInt := func(n *int, v int) {
		if *n == 0 {
			*n = v
		}
	}
	defInt(&c.MaxHeaderBytes, DefaultMaxHeaderBytes)
	defInt(&c.UpstreamHeaderBytes, DefaultUpstreamHeaderBytes)
	defInt(&c.MaxConns, DefaultMaxConns)
	defInt(&c.MaxHandshakes, DefaultMaxHandshakes)
	defInt(&c.MaxHandshakesPerSource, DefaultMaxHandshakesPerSource)
	defInt(&c.BodyMinRate, DefaultBodyMinRate)
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.parseDelta == nil {
		c.parseDelta = revoke.ParseDelta
	}
	if c.parseCRLFile == nil {
		c.parseCRLFile = revoke.ParseCRLFile
	}
}
