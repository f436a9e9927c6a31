package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/crlsource"
	"minica/formats"
	"minica/identity"
	"minica/internal/endpoint"
	"minica/proxy"
)

// Defaults of the proxy command that the library does not define.
const (
	defaultListen          = ":8443"
	defaultReloadInterval  = 5 * time.Second
	defaultShutdownTimeout = 30 * time.Second
	// proxyGCPercent is the proxy's GOGC unless the environment sets one.
	// Its live heap is small and its garbage grows with the requests, so
	// Go's default of 100 collects many times a second under keep-alive
	// load. 200 halves the collections for a larger heap (docs/proxy.md,
	// "Memory", has the figures).
	proxyGCPercent = 200
)

// setProxyGCPercent sets the garbage collector's target to proxyGCPercent,
// unless lookupEnv finds GOGC, which the runtime has already applied.
func setProxyGCPercent(lookupEnv func(string) (string, bool)) {
	if _, ok := lookupEnv("GOGC"); !ok {
		debug.SetGCPercent(proxyGCPercent)
	}
}

func proxyCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "proxy",
		Usage:     "run the mTLS reverse proxy: only valid, unrevoked clients of the CA reach --upstream",
		ArgsUsage: " ",
		Description: "Requires a client certificate of the CA (chain, validity, EKU clientAuth, CRL)\n" +
			"and forwards each request to --upstream with identity headers (--headers,\n" +
			"--header). The CA certificate and the CRL come from the CA directory unless\n" +
			"--ca and --crl name files; the server certificate is the newest valid one of\n" +
			"--server-cert NAME, or --cert and --key. The CA, CRL and server certificate\n" +
			"are re-read every --reload-interval and on SIGHUP; a bad new file keeps the\n" +
			"last good one. --crl may be an http(s) URL: the proxy fetches it at start (or\n" +
			"takes --crl-cache), then follows the long poll of 'minica serve' or polls with\n" +
			"conditional GETs every --crl-refresh, and reloads each new CRL at once. SIGTERM or SIGINT stop accepting, drain in-flight requests\n" +
			"for up to --shutdown-timeout, and exit 0. Durations accept Go syntax plus\n" +
			"d and y; 0 turns off --crl-grace and --reload-interval. See docs/proxy.md.\n\n" +
			"Example:\n   minica proxy --upstream http://127.0.0.1:8080 --server-cert app.example.com\n" +
			"   minica proxy --upstream http://127.0.0.1:8080 --cert app.crt --key app.key --ca ca.crt \\\n" +
			"     --crl http://pki.example.com/crl.der --crl-cache /var/cache/minica/crl.der\n" +
			"   minica proxy --listen 127.0.0.1:8443 --upstream unix:/run/app.sock --cert app.crt --key app.key \\\n" +
			"     --headers apache --header X-User=email --allow-ou Ops --metrics 127.0.0.1:9100\n" +
			"   minica proxy --policy front.json --server-cert front.example.com   # routes and rules: see 'minica proxy policy check'",
		Flags:       append(proxyFlags(), proxyRefusalFlags()...),
		Subcommands: []*cli.Command{proxyPolicyCommand(e)},
		Action: func(c *cli.Context) error {
			return runProxy(c, e)
		},
	}
}

func proxyFlags() []cli.Flag {
	dur := ca.FormatDuration
	return []cli.Flag{
		&cli.StringFlag{Name: "listen", Value: defaultListen, Usage: "listen for TLS clients on `ADDR` (PORT or HOST:PORT; port 0 picks a free one)"},
		&cli.StringFlag{Name: "upstream", Usage: "forward to `URL`: http://HOST:PORT (or HOST:PORT), https://HOST:PORT or unix:/PATH (required unless --policy)"},
		&cli.StringFlag{Name: "upstream-ca", Usage: "verify an https upstream against the CA certificates in `FILE` (default: the system roots)"},
		&cli.StringFlag{Name: "server-cert", Usage: "serve the newest valid server certificate issued as `NAME`, with its chain and key"},
		&cli.StringFlag{Name: "cert", Usage: "serve the certificate chain in `FILE` (PEM, leaf first) instead of --server-cert"},
		&cli.StringFlag{Name: "key", Usage: "the private key of --cert, in `FILE` (unencrypted PEM)"},
		&cli.StringFlag{Name: "ca", Usage: "accept clients of the CA certificates in `FILE` (default: the CA directory's ca.crt; on an intermediate, chain.pem, it and the root)"},
		&cli.StringSliceFlag{Name: "crl", Usage: "check clients against the CRL in `FILE` (PEM or DER; repeatable, or one PEM file with several, for the CRL of each CA of a hierarchy) or at an http(s) URL it follows (default: the CA directory's crl.der; on an intermediate, crl-chain.pem, its CRL and the root's)"},
		caFingerprintFlag(),
		&cli.StringFlag{Name: "crl-ca", Usage: "verify an https --crl URL against the CA certificates in `FILE` (default: the system roots)"},
		&cli.StringFlag{Name: "crl-cache", Usage: "keep the last good CRL of the --crl URL in `FILE`, to start from while the URL is down"},
		&cli.StringFlag{Name: "crl-refresh", Value: dur(crlsource.DefaultRefresh), Usage: "poll a --crl URL that does not long-poll every `DURATION` (a failed fetch is retried within 5s, or this if shorter)"},
		&cli.StringFlag{Name: "crl-timeout", Value: dur(crlsource.DefaultBodyTimeout), Usage: "give up a CRL fetch whose headers (beyond the long-poll wait) or body take longer than `DURATION`"},
		&cli.StringFlag{Name: "crl-grace", Value: "0", Usage: "accept clients for this `DURATION` past the CRL's nextUpdate, with warnings"},
		&cli.StringFlag{Name: "reload-interval", Value: dur(defaultReloadInterval), Usage: "re-read the CA, CRL and server certificate every `DURATION`"},
		&cli.StringFlag{Name: "headers", Value: identity.ProfileMinica, Usage: "identity header `PROFILE`: " + strings.Join(identity.Profiles, ", ")},
		&cli.StringSliceFlag{Name: "header", Usage: "add the identity header `NAME=FIELD` (repeatable; FIELD: " + strings.Join(identity.FieldNames(), ", ") + ")"},
		&cli.StringSliceFlag{Name: "allow-cn", Usage: "let through only clients with this `CN` or another allowed value (repeatable)"},
		&cli.StringSliceFlag{Name: "allow-email", Usage: "let through clients with this `EMAIL` (repeatable)"},
		&cli.StringSliceFlag{Name: "allow-ou", Usage: "let through clients with this `OU` (repeatable)"},
		&cli.StringSliceFlag{Name: "allow-uri", Usage: "let through clients with this `URI` SAN (repeatable)"},
		&cli.StringFlag{Name: "metrics", Usage: "serve /metrics and /healthz on `ADDR`, a listener of their own"},
		&cli.StringFlag{Name: "access-log", Usage: "append the access and event log to `FILE`, reopened on SIGHUP (default: stderr)"},
		accessLogFormatFlag(),
		&cli.IntFlag{Name: "max-header-bytes", Value: proxy.DefaultMaxHeaderBytes, Usage: "answer 431 to request headers beyond `N` bytes"},
		&cli.IntFlag{Name: "upstream-header-bytes", Value: proxy.DefaultUpstreamHeaderBytes, Usage: "answer 431 when request plus identity headers exceed `N` bytes"},
		&cli.IntFlag{Name: "max-conns", Value: proxy.DefaultMaxConns, Usage: "keep at most `N` client connections past their TLS handshake open; more wait"},
		&cli.IntFlag{Name: "max-handshakes", Value: proxy.DefaultMaxHandshakes, Usage: "run at most `N` TLS handshakes at once; beyond, close the oldest idle one"},
		&cli.IntFlag{Name: "max-handshakes-per-source", Value: proxy.DefaultMaxHandshakesPerSource, Usage: "once half of --max-handshakes run, close at once more than `N` from one client address (IPv6: /64)"},
		&cli.StringFlag{Name: "handshake-timeout", Value: dur(proxy.DefaultHandshakeTimeout), Usage: "close connections whose TLS handshake takes longer than `DURATION`"},
		&cli.StringFlag{Name: "header-timeout", Value: dur(proxy.DefaultReadHeaderTimeout), Usage: "close connections whose request headers take longer than `DURATION`"},
		&cli.StringFlag{Name: "idle-timeout", Value: dur(proxy.DefaultIdleTimeout), Usage: "close keep-alive connections idle for `DURATION`"},
		&cli.StringFlag{Name: "body-timeout", Value: dur(proxy.DefaultBodyTimeout), Usage: "answer 408 to a request body that stalls for `DURATION`, or falls behind --body-min-rate after it"},
		&cli.IntFlag{Name: "body-min-rate", Value: proxy.DefaultBodyMinRate, Usage: "the `N` bytes per second a request body must keep up with (each N bytes earn a second of --body-timeout)"},
		&cli.StringFlag{Name: "write-timeout", Value: dur(proxy.DefaultWriteTimeout), Usage: "cut a client that does not take a write of its response (at most 16 KiB) within `DURATION`"},
		&cli.StringFlag{Name: "upstream-dial-timeout", Value: dur(proxy.DefaultUpstreamDialTimeout), Usage: "answer 504 when connecting upstream takes longer than `DURATION`"},
		&cli.StringFlag{Name: "upstream-timeout", Value: dur(proxy.DefaultUpstreamResponseHeaderTimeout), Usage: "answer 504 when the upstream's response headers take longer than `DURATION`"},
		&cli.StringFlag{Name: "shutdown-timeout", Value: dur(defaultShutdownTimeout), Usage: "on SIGTERM, wait up to `DURATION` for in-flight requests"},
		&cli.BoolFlag{Name: "standard-forwarding", EnvVars: []string{"MINICA_PROXY_STANDARD"}, Usage: "forward every request with Go's standard reverse proxy, without minica's direct way for HTTP/1 (the same behaviour, at more CPU a request)"},
		policyFlag(),
	}
}

// proxyOptions are the flags of the proxy command, checked.
type proxyOptions struct {
	listen, metrics, accessLog string
	shutdown                   time.Duration
	cfg                        proxy.Config
	logFile                    *logFile // the --access-log file, nil for stderr
	// caPin is --ca-fingerprint, nil without.
	caPin []byte
	// crlURL is --crl when it is a URL, which the proxy follows.
	crlURL               string
	crlRefresh, crlLimit time.Duration
	// serverCA is the CA directory, when the proxy reads from it.
	serverCA *followedCA
}

// followedCA is the CA directory a running proxy reads its --server-cert
// from: opened again by its path, with open, when the directory there was
// replaced (a restore over the same path), as the one held open goes on
// reading the old one. It is safe for concurrent use.
type followedCA struct {
	mu   sync.Mutex
	ca   *ca.CA
	open func() (*ca.CA, error)
}

// serverCert is ca.CA.ServerTLSCertificate of the directory now at the
// CA's path. When it cannot be opened again, the error says so and the
// directory held stays, to be tried again on the next call.
func (f *followedCA) serverCert(name string, now time.Time) (tls.Certificate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ca.Replaced() {
		fresh, err := f.open()
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("opening the replaced CA directory again: %w", err)
		}
		f.ca.Close()
		f.ca = fresh
	}
	return f.ca.ServerTLSCertificate(name, now)
}

// close releases the directory held.
func (f *followedCA) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ca.Close()
}

func runProxy(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	o, err := parseProxyFlags(c)
	if err != nil {
		return err
	}
	var authority *ca.CA
	if c.String("server-cert") != "" || c.String("ca") == "" || len(c.StringSlice("crl")) == 0 {
		if authority, err = openCA(c, e); err != nil {
			return err
		}
		served := &followedCA{ca: authority, open: func() (*ca.CA, error) { return openCA(c, e) }}
		defer served.close()
		o.serverCA = served
	}
	if err := setProxySources(c, e, authority, o); err != nil {
		return err
	}
	o.cfg.Log, o.cfg.Now = e.stderr, e.now
	o.cfg.CRLExpiredHint = proxyCRLExpiredHint(c.StringSlice("crl"))
	if o.accessLog != "" {
		warn := func(err error) { warnf(e.stderr, "%v", err) }
		if o.logFile, err = openLogFile(o.accessLog, warn); err != nil {
			return err
		}
		defer o.logFile.Close()
		o.cfg.Log = o.logFile
	}
	p, err := proxy.New(o.cfg)
	if err != nil {
		if hint := proxyCRLIssuerHint(c, o, err); hint != "" {
			return withHint(err, "%s", hint)
		}
		return serverCertNameHint(authority, policyStartHint(proxyStartHint(err)))
	}
	setProxyGCPercent(os.LookupEnv)
	return serveProxy(c.Context, e, p, o)
}

// parseProxyFlags checks every flag that needs no file, so that a mistake
// is a usage error before anything is opened.
func parseProxyFlags(c *cli.Context) (*proxyOptions, error) {
	o := &proxyOptions{listen: c.String("listen"), metrics: c.String("metrics"), accessLog: c.String("access-log")}
	cfg := &o.cfg
	cfg.Upstream = c.String("upstream")
	if err := parsePolicyFlag(c, cfg); err != nil {
		return nil, err
	}
	if cfg.Upstream == "" && cfg.PolicyFile == "" {
		return nil, usagef(c, "--upstream is required: http://HOST:PORT, https://HOST:PORT or unix:/PATH (or --policy FILE)")
	}
	if _, err := endpoint.ParseUpstream(cfg.Upstream); err != nil && cfg.PolicyFile == "" {
		return nil, usagef(c, "--upstream %v", err)
	}
	host, port, err := endpoint.ParseListen(o.listen)
	if err != nil {
		return nil, usagef(c, "--listen %v", err)
	}
	o.listen = net.JoinHostPort(host, port)
	if err := checkServerCertFlags(c); err != nil {
		return nil, err
	}
	if err := parseCRLURLFlags(c, o); err != nil {
		return nil, err
	}
	if o.caPin, err = parseCAPin(c); err != nil {
		return nil, err
	}
	if err := parseAccessLogFormat(c, cfg); err != nil {
		return nil, err
	}
	cfg.Profile, cfg.CustomHeaders = c.String("headers"), c.StringSlice("header")
	if _, err := identity.NewHeaders(cfg.Profile, cfg.CustomHeaders); err != nil {
		return nil, usagef(c, "%v", err)
	}
	cfg.StandardForwarding = c.Bool("standard-forwarding")
	cfg.AllowCN, cfg.AllowEmail = c.StringSlice("allow-cn"), c.StringSlice("allow-email")
	cfg.AllowOU, cfg.AllowURI = c.StringSlice("allow-ou"), c.StringSlice("allow-uri")
	durations := []struct {
		flag       string
		dst        *time.Duration
		zeroIsNone bool
	}{
		{"crl-grace", &cfg.CRLGrace, true},
		{"reload-interval", &cfg.ReloadInterval, true},
		{"handshake-timeout", &cfg.HandshakeTimeout, false},
		{"header-timeout", &cfg.ReadHeaderTimeout, false},
		{"idle-timeout", &cfg.IdleTimeout, false},
		{"body-timeout", &cfg.BodyTimeout, false},
		{"write-timeout", &cfg.WriteTimeout, false},
		{"upstream-dial-timeout", &cfg.UpstreamDialTimeout, false},
		{"upstream-timeout", &cfg.UpstreamResponseHeaderTimeout, false},
		{"shutdown-timeout", &o.shutdown, false},
	}
	for _, d := range durations {
		v := c.String(d.flag)
		if d.zeroIsNone && v == "0" {
			continue
		}
		var err error
		if *d.dst, err = ca.ParseDuration(v); err != nil {
			return nil, usagef(c, "--%s: %v", d.flag, err)
		}
	}
	sizes := []struct {
		flag string
		dst  *int
	}{
		{"max-header-bytes", &cfg.MaxHeaderBytes}, {"upstream-header-bytes", &cfg.UpstreamHeaderBytes}, {"max-conns", &cfg.MaxConns},
		{"max-handshakes", &cfg.MaxHandshakes}, {"max-handshakes-per-source", &cfg.MaxHandshakesPerSource}, {"body-min-rate", &cfg.BodyMinRate},
	}
	for _, s := range sizes {
		if *s.dst = c.Int(s.flag); *s.dst <= 0 {
			return nil, usagef(c, "--%s must be positive, got %d", s.flag, *s.dst)
		}
	}
	if err := parseRefusalFlags(c, cfg); err != nil {
		return nil, err
	}
	return o, nil
}

func checkServerCertFlags(c *cli.Context) error {
	name, cert, key := c.String("server-cert"), c.String("cert"), c.String("key")
	switch {
	case name != "" && (cert != "" || key != ""):
		return usagef(c, "--server-cert and --cert/--key exclude each other")
	case name == "" && cert == "" && key == "":
		return usagef(c, "give the proxy's certificate: --server-cert NAME, or --cert FILE and --key FILE")
	case name == "" && (cert == "" || key == ""):
		return usagef(c, "--cert and --key go together")
	case name != "":
		if err := ca.ValidateName(name); err != nil {
			return usagef(c, "--server-cert: %v", err)
		}
	}
	return nil
}

// setProxySources sets the loaders and the CRL source of o.cfg: each
// re-reads its file on every call, so that a reload sees what changed on
// disk; a --crl URL is fetched once here, and the proxy follows it.
func setProxySources(c *cli.Context, e *env, authority *ca.CA, o *proxyOptions) error {
	cfg := &o.cfg
	caFile, crlFiles := c.String("ca"), c.StringSlice("crl")
	if caFile == "" {
		caFile = authority.CertFile()
		if authority.IsIntermediate() {
			// The path runs up to the root, with a CRL for each CA.
			caFile = authority.Path("chain.pem")
		}
	}
	if len(crlFiles) == 0 {
		crlFiles = []string{authority.Path(ca.CRLDERFile)}
		if authority.IsIntermediate() {
			crlFiles = []string{authority.Path(ca.CRLChainFile)}
		}
	}
	cfg.LoadCA = func() ([]*x509.Certificate, error) { return readPinnedCerts(caFile, o.caPin) }
	cfg.CRL = crlsource.Files(crlFiles)
	if o.crlURL != "" {
		f, err := startCRLFollow(c, e, o)
		if err != nil {
			return err
		}
		cfg.CRL = f
	}
	if name := c.String("server-cert"); name != "" {
		cfg.LoadCert = func() (tls.Certificate, error) { return o.serverCA.serverCert(name, e.now()) }
	} else {
		certFile, keyFile := c.String("cert"), c.String("key")
		cfg.LoadCert = func() (tls.Certificate, error) { return tls.LoadX509KeyPair(certFile, keyFile) }
	}
	if f := c.String("upstream-ca"); f != "" {
		certs, err := readCertsFile(f)
		if err != nil {
			return err
		}
		cfg.UpstreamRootCAs = x509.NewCertPool()
		for _, cert := range certs {
			cfg.UpstreamRootCAs.AddCert(cert)
		}
	}
	return nil
}

func readCertsFile(file string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading certificates %q: %w", file, err)
	}
	certs, err := formats.ParseCertificates(data)
	if err != nil {
		return nil, fmt.Errorf("reading certificates %q: %w", file, err)
	}
	return certs, nil
}

// proxyCRLIssuerHint is the hint of a CRL of another CA given with --crl
// (a URL or a file): the flag or --ca is wrong. The CA directory's own
// CRL (no --crl) keeps proxyStartHint's, to publish one.
func proxyCRLIssuerHint(c *cli.Context, o *proxyOptions, err error) string {
	crls := c.StringSlice("crl")
	switch {
	case o.crlURL != "":
		return crlIssuerHint(err, "at "+o.crlURL, "this CA", "check --crl URL or --ca")
	case len(crls) == 1:
		return crlIssuerHint(err, fmt.Sprintf("in %q", crls[0]), "this CA", "check --crl FILE or --ca")
	case len(crls) > 1:
		return crlIssuerHint(err, "of --crl", "this CA", "check --crl FILE or --ca")
	}
	return ""
}

// proxyCRLExpiredHint is what the proxy logs (hint=) with a CRL past its
// nextUpdate: crls, --crl, given means the CRL comes from the CA host.
func proxyCRLExpiredHint(crls []string) string {
	return crlExpiredAdvice(len(crls) > 0)
}

// proxyStartHint adds what to do to the errors of proxy.New.
func proxyStartHint(err error) error {
	var readErr *crlsource.FileError
	switch {
	case errors.Is(err, proxy.ErrCRLExpired):
		return withHint(err, "publish a fresh CRL with 'minica crl', or accept a stale one for a while with --crl-grace")
	case errors.As(err, &readErr), errors.Is(err, proxy.ErrCRLUnverified), errors.Is(err, proxy.ErrCRLFuture):
		return withHint(err, "publish the CA's CRL with 'minica crl' (the proxy never runs without a valid CRL)")
	case errors.Is(err, ca.ErrNoServerCert):
		return withHint(err, "issue one with 'minica issue server NAME --dns HOST', or pass --cert and --key")
	}
	return err
}
