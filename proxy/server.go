package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"minica/crlsource"
	"minica/identity"
	"minica/internal/certreload"
	"minica/revoke"
)

// Proxy is an mTLS reverse proxy. Build one with New, run it with Serve,
// refresh its CA bundle, CRL and certificate with Reload, stop it with
// Shutdown. Its methods are safe for concurrent use.
type Proxy struct {
	cfg       Config
	headers   *identity.Headers
	reserved  identity.Namespace
	target    *url.URL
	unixPath  string
	rp        *httputil.ReverseProxy
	tlsConfig *tls.Config
	srv       *http.Server
	metrics   *metrics
	log       *logger
	exchanges *exchanges
	idle      *idleConns
	cert      *certreload.Cert // the server certificate, loaded again by Reload

	trust    atomic.Pointer[trust]
	verified sync.Map // leaf *x509.Certificate -> verified, from handshake to connContext
	reloadMu sync.Mutex
	lastWarn atomic.Int64 // unix seconds of the last CRL grace/expiry warning
	routing  atomic.Pointer[routing]
	policy   policyState // guarded by reloadMu
}

// New checks cfg, loads the CA bundle, the CRL and the server certificate,
// and returns a Proxy ready to Serve. Any bad input is an error: unlike
// Reload, New has no last good state to fall back on.
func New(cfg Config) (*Proxy, error) {
	if err := cfg.checkLimits(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	if err := cfg.checkRefusal(); err != nil {
		return nil, err
	}
	if cfg.LoadCA == nil || cfg.CRL == nil || cfg.LoadCert == nil {
		return nil, errors.New("config: LoadCA, CRL and LoadCert are required")
	}
	headers, err := identity.NewHeaders(cfg.Profile, cfg.CustomHeaders)
	if err != nil {
		return nil, err
	}
	up, err := configUpstream(&cfg)
	if err != nil {
		return nil, err
	}
	if cfg.LogFormat, err = ParseLogFormat(cfg.LogFormat); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	p := &Proxy{
		cfg:      cfg,
		headers:  headers,
		reserved: headers.Namespace(),
		target:   up.URL,
		unixPath: up.Socket,
		metrics:  newMetrics(),
		log:      &logger{w: cfg.Log, json: cfg.LogFormat == LogJSON},

		exchanges: newExchanges(),
		idle:      newIdleConns(),
	}
	now := cfg.Now()
	cas, roots, err := loadCA(&cfg)
	if err != nil {
		return nil, err
	}
	crl, err := loadCRL(&cfg, cas, nil, now)
	if err != nil {
		return nil, err
	}
	for _, c := range crl.crls {
		if crlState(c.CRL, cfg.CRLGrace, now) == revoke.Expired {
			return nil, fmt.Errorf("loading CRL: %w (nextUpdate %s)", ErrCRLExpired, c.CRL.NextUpdate().UTC().Format(time.RFC3339))
		}
	}
	if p.cert, err = certreload.New(func() (tls.Certificate, error) { return loadCert(&p.cfg) }, certreload.Options{}); err != nil {
		return nil, err
	}
	p.tlsConfig = p.newTLSConfig()
	t := &trust{gen: 1}
	t.setCAs(cas, roots)
	t.setCRLs(crl)
	p.storeTrust(t)
	releaseRead(&cfg, crl)
	p.srv = &http.Server{
		Handler:           p.withDeadlines(p),
		TLSConfig:         p.tlsConfig,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ConnContext:       p.connContext,
		ConnState:         p.connState,
		ErrorLog:          log.New(p.log.eventWriter("http-error"), "", 0),
	}
	if err := p.initRouting(cas); err != nil {
		return nil, err
	}
	return p, nil
}

// newTLSConfig builds the one tls.Config of the proxy. What changes on
// reload is read at each handshake: the certificate by GetCertificate
// (p.cert), the CA bundle and the CRL by GetConfigForClient, which hands
// each handshake the configuration of the current trust (see
// clientConfig). A reload thus applies to the next handshake, resumed
// sessions included, without touching open connections.
func (p *Proxy) newTLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// AEAD suites only; TLS 1.3 suites are all AEAD and not configurable.
		CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
		Renegotiation: tls.RenegotiateNever,
		NextProtos:    []string{"h2", "http/1.1"},
		// Without the per-trust configuration, no client would verify.
		ClientAuth: tls.RequireAndVerifyClientCert,
		ClientCAs:  x509.NewCertPool(),
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			return p.cert.GetCertificate(hello)
		},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return p.trust.Load().tls, nil
		},
		Time: p.cfg.Now,
	}
}

// storeTrust makes t the current trust, with its handshake configuration,
// and cuts the configuration of the trust it replaces loose from it (see
// clientConfig).
func (p *Proxy) storeTrust(t *trust) {
	t.tls, t.held = p.clientConfig(t)
	if old := p.trust.Swap(t); old != nil {
		old.held.Store(nil)
	}
}

// clientConfig builds, like the proxy's tls.Config (not a Clone of it, which
// http.Server adjusts while serving), the configuration of the handshakes
// verified against t, once per reload. Go's verifier
// checks the chain to t's bundle and the validity period, so that a refusal
// ends with the matching alert (unknown_ca, certificate_expired,
// bad_certificate for a wrong EKU); VerifyConnection (see verifyConn) makes
// the other checks, resumed sessions included, and a refusal there ends
// with bad_certificate. Session tickets stay those of the proxy's config.
//
// Every connection keeps the configuration it was handshaken with, so it
// reaches t only through held, which storeTrust empties when t is
// replaced: open connections must not keep the CRLs of past reloads (26 MB
// each at a million entries). A handshake that began before the reload is
// then verified in full against the trust in use, as open connections are
// after a reload.
func (p *Proxy) clientConfig(t *trust) (*tls.Config, *atomic.Pointer[trust]) {
	held := new(atomic.Pointer[trust])
	held.Store(t)
	c := p.newTLSConfig()
	c.GetConfigForClient = nil
	c.ClientCAs = t.roots
	if t.layered {
		// Go's verifier would take every CA of the bundle for a trust
		// anchor and stop at the intermediate; verifyConn builds the path
		// up to the root itself, once, so a refusal there ends with
		// bad_certificate whatever the reason (the log names it). The
		// certificate request still names the CAs of the bundle.
		c.ClientAuth = tls.RequireAnyClientCert
	}
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		t := held.Load()
		if t == nil {
			t, cs.VerifiedChains = p.trust.Load(), nil // verified against the bundle replaced
		}
		chain, err := verifyConn(cs, t, p.cfg.CRLGrace, p.now())
		if err == nil {
			p.verified.Store(cs.PeerCertificates[0], verified{chain: chain, gen: t.gen})
		}
		return err
	}
	p.refusalTLS(c)
	return c, held
}

func (p *Proxy) now() time.Time {
	now := p.cfg.Now()
	p.warnCRL(now)
	return now
}

// Serve accepts connections on ln until ctx is done (then it closes every
// connection at once) or Shutdown is called (then it drains them). ln is the
// caller's and must be a plain TCP (or unix) listener: Serve does TLS. It
// returns nil after Shutdown or ctx, else the error that stopped it. While
// it serves, it follows a CRL source that brings new CRLs itself (see
// Config.CRL) and reloads each at once.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	tl := newTLSListener(ln, p)
	stop := make(chan struct{})
	defer close(stop)
	go p.watchExpiry(stop)
	if f, ok := p.cfg.CRL.(crlsource.Followed); ok {
		defer p.followCRL(ctx, f)()
	}
	go func() {
		var tick <-chan time.Time
		if p.cfg.ReloadInterval > 0 {
			t := time.NewTicker(p.cfg.ReloadInterval)
			defer t.Stop()
			tick = t.C
		}
		for {
			select {
			case <-ctx.Done():
				p.srv.Close()
				return
			case <-tick:
				p.Reload() // logs and counts its own failures
			case <-stop:
				return
			}
		}
	}()
	err := p.srv.Serve(tl)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections and waits, until ctx is done, for
// in-flight requests to finish; then it closes what is left.
func (p *Proxy) Shutdown(ctx context.Context) error {
	err := p.srv.Shutdown(ctx)
	if err != nil {
		p.srv.Close()
	}
	return err
}
