package main

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/internal/certreload"
	"minica/internal/endpoint"
	"minica/revoke"
	"minica/serve"
	"minica/serve/ocsp"
	"minica/serve/renew"
)

// defaultServeListen is serve's --listen: loopback, so that publishing the
// CA to a network is a choice (a reverse proxy or --listen :8080).
const defaultServeListen = "127.0.0.1:8080"

func serveCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "serve",
		Usage:     "publish the CA certificate, chain and CRL over HTTP(S), and keep the CRL fresh",
		ArgsUsage: " ",
		Description: "Serves /ca.crt, /ca.pem, /chain.pem, /crl.der, /crl.pem (also at the path of the\n" +
			"CA's CRL URL), /ocsp, /healthz and /metrics, GET and HEAD only; nothing else of\n" +
			"the CA directory. An intermediate CA also serves the root's CRL it keeps at\n" +
			"/root-crl.der and /root-crl.pem, and at the path of the root's CRL URL when that\n" +
			"URL names this CA's CRL or OCSP host. A CRL that 'minica revoke' or 'minica crl' publishes is served\n" +
			"within a second; past half its lifetime serve re-signs the CRL as 'minica crl'\n" +
			"does, so it needs the CA key (password from --password-file, MINICA_PASSWORD or\n" +
			"a prompt) unless --no-sign, which then warns that the CRL will lapse. A GET of\n" +
			"the CRL with If-None-Match and 'Prefer: wait=N' waits up to 60s for a new one\n" +
			"(the proxy's push path). OCSP (POST, or GET /ocsp/BASE64) is answered from the\n" +
			"issuance database, signed by a responder certificate serve issues itself (see\n" +
			"minica ocsp url). With --enroll it answers the one-time links of 'minica enroll'\n" +
			"on the HTTPS listener (see docs/enrollment.md), and with --oidc-issuer people sign\n" +
			"in there with the company's identity provider to get their own (docs/sign-in.md);\n" +
			"with --acme, ACME clients\n" +
			"(certbot, lego, Caddy...) at /acme/directory (see docs/acme.md). On --listen-tls, POST /renew\n" +
			"renews the certificate the client presents (see 'minica agent'), unless\n" +
			"--no-renew or --no-sign. --listen '' turns the HTTP listener off. SIGTERM or\n" +
			"SIGINT stop it, draining requests for up to --shutdown-timeout. See docs/serve.md.\n\n" +
			"Example:\n   minica serve --listen :8080\n" +
			"   minica serve --listen 127.0.0.1:8080 --listen-tls :8443 --server-cert pki.example.com \\\n" +
			"     --metrics-listen 127.0.0.1:9101 --password-file /run/secrets/ca-password",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: defaultServeListen, Usage: "serve HTTP on `ADDR` (PORT or HOST:PORT; '' for none)"},
			&cli.StringFlag{Name: "listen-tls", Usage: "serve HTTPS on `ADDR`, with --server-cert or --cert/--key"},
			&cli.StringFlag{Name: "server-cert", Usage: "for --listen-tls, the newest valid server certificate issued as `NAME`"},
			&cli.StringFlag{Name: "cert", Usage: "for --listen-tls, the certificate chain in `FILE` (PEM, leaf first)"},
			&cli.StringFlag{Name: "key", Usage: "the private key of --cert, in `FILE` (unencrypted PEM)"},
			&cli.StringFlag{Name: "listen-ocsp", Usage: "also answer OCSP alone on `ADDR`, plain HTTP, with a faster HTTP server (see docs/serve.md)"},
			&cli.StringFlag{Name: "metrics-listen", Usage: "serve /metrics and /healthz on `ADDR` only, a listener of their own"},
			&cli.BoolFlag{Name: "no-sign", Usage: "run without the CA key: serve the published CRL, never re-sign it"},
			&cli.BoolFlag{Name: "ocsp-ca-key", Usage: "sign OCSP responses with the CA key itself instead of a delegated responder certificate"},
			&cli.BoolFlag{Name: "no-renew", Usage: "do not renew certificates on --listen-tls (POST /renew answers 404)"},
			&cli.StringFlag{Name: "renew-grace", Usage: "renew a client certificate up to `DURATION` after it expired (default: not at all)"},
			&cli.BoolFlag{Name: "renew-keygen", Usage: "also answer POST /renew/keygen: serve makes the new key pair and returns it"},
			&cli.IntFlag{Name: "renew-rate", Value: renew.DefaultRate, Usage: "renew at most `N` certificates a second (bursts of twice that)"},
			passwordFileFlag(),
			pinFileFlag(),
			&cli.IntFlag{Name: "max-conns", Value: serve.DefaultMaxConns, Usage: "keep at most `N` connections per listener; beyond, close the oldest not in a request"},
			&cli.IntFlag{Name: "max-long-polls", Value: serve.DefaultMaxWaiters, Usage: "let at most `N` long polls wait at once; beyond, answer at once"},
			&cli.IntFlag{Name: "max-header-bytes", Value: serve.DefaultMaxHeaderBytes, Usage: "answer 431 to request headers beyond `N` bytes"},
			&cli.StringFlag{Name: "header-timeout", Value: ca.FormatDuration(serve.DefaultReadHeaderTimeout), Usage: "close connections whose request headers take longer than `DURATION`"},
			&cli.StringFlag{Name: "idle-timeout", Value: ca.FormatDuration(serve.DefaultIdleTimeout), Usage: "close keep-alive connections idle for `DURATION`"},
			&cli.StringFlag{Name: "shutdown-timeout", Value: ca.FormatDuration(defaultShutdownTimeout), Usage: "on SIGTERM, wait up to `DURATION` for requests in flight"},
		}, slices.Concat(serveEnrollFlags(), serveSigninFlags(), serveACMEFlags())...),
		Action: func(c *cli.Context) error { return runServe(c, e) },
	}
}

// serveOptions are the flags of the serve command, checked.
type serveOptions struct {
	listen, listenTLS, metrics, listenOCSP string
	shutdown                               time.Duration
	cfg                                    serve.Config
	// renew is set when POST /renew is on; renewCfg is its configuration
	// but for the CA, the key and the CRL.
	renew    bool
	renewCfg renew.Config
	acme     acmeOptions
}

func parseServeFlags(c *cli.Context) (*serveOptions, error) {
	o := &serveOptions{}
	for _, l := range []struct {
		flag string
		dst  *string
	}{{"listen", &o.listen}, {"listen-tls", &o.listenTLS}, {"metrics-listen", &o.metrics}, {"listen-ocsp", &o.listenOCSP}} {
		v := c.String(l.flag)
		if v == "" {
			continue
		}
		host, port, err := endpoint.ParseListen(v)
		if err != nil {
			return nil, usagef(c, "--%s %v", l.flag, err)
		}
		*l.dst = net.JoinHostPort(host, port)
	}
	name, cert, key := c.String("server-cert"), c.String("cert"), c.String("key")
	switch {
	case o.listen == "" && o.listenTLS == "":
		return nil, usagef(c, "nothing to serve on: give --listen ADDR, --listen-tls ADDR or both")
	case o.listenTLS == "" && (name != "" || cert != "" || key != ""):
		return nil, usagef(c, "--server-cert, --cert and --key are for --listen-tls")
	case o.listenTLS != "" && name == "" && cert == "" && key == "":
		return nil, usagef(c, "--listen-tls needs its certificate: --server-cert NAME, or --cert FILE and --key FILE")
	case name != "" && (cert != "" || key != ""):
		return nil, usagef(c, "--server-cert and --cert/--key exclude each other")
	case name == "" && (cert == "") != (key == ""):
		return nil, usagef(c, "--cert and --key go together")
	case name != "":
		if err := ca.ValidateName(name); err != nil {
			return nil, usagef(c, "--server-cert: %v", err)
		}
	}
	if c.Bool("no-sign") && c.Bool("ocsp-ca-key") {
		return nil, usagef(c, "--no-sign and --ocsp-ca-key exclude each other: signing OCSP with the CA key needs the key")
	}
	if c.Bool("no-sign") && c.String("password-file") != "" {
		return nil, usagef(c, "--no-sign and --password-file exclude each other: without signing, serve needs no key")
	}
	cfg := &o.cfg
	for _, d := range []struct {
		flag string
		dst  *time.Duration
	}{{"header-timeout", &cfg.ReadHeaderTimeout}, {"idle-timeout", &cfg.IdleTimeout}, {"shutdown-timeout", &o.shutdown}} {
		v, err := ca.ParseDuration(c.String(d.flag))
		if err != nil {
			return nil, usagef(c, "--%s: %v", d.flag, err)
		}
		if v <= 0 {
			return nil, usagef(c, "--%s must be positive", d.flag)
		}
		*d.dst = v
	}
	for _, s := range []struct {
		flag string
		dst  *int
	}{{"max-conns", &cfg.MaxConns}, {"max-long-polls", &cfg.MaxWaiters}, {"max-header-bytes", &cfg.MaxHeaderBytes}} {
		if *s.dst = c.Int(s.flag); *s.dst <= 0 {
			return nil, usagef(c, "--%s must be positive, got %d", s.flag, *s.dst)
		}
	}
	if cfg.MaxWaiters >= cfg.MaxConns {
		return nil, usagef(c, "--max-long-polls (%d) must be below --max-conns (%d), so that long polls leave room for other requests", cfg.MaxWaiters, cfg.MaxConns)
	}
	cfg.SeparateOps = o.metrics != ""
	if err := parseServeACMEFlags(c, o); err != nil {
		return nil, err
	}
	if err := parseRenewFlags(c, o); err != nil {
		return nil, err
	}
	return o, nil
}

// parseRenewFlags reads the flags of POST /renew: on with --listen-tls and
// the CA key, unless --no-renew.
func parseRenewFlags(c *cli.Context, o *serveOptions) error {
	o.renew = o.listenTLS != "" && !c.Bool("no-renew") && !c.Bool("no-sign")
	set := ""
	for _, f := range []string{"renew-grace", "renew-keygen", "renew-rate"} {
		if c.IsSet(f) {
			set = f
		}
	}
	if set != "" && !o.renew {
		why := "--no-renew"
		switch {
		case o.listenTLS == "":
			why = "no --listen-tls (renewal needs HTTPS)"
		case c.Bool("no-sign"):
			why = "--no-sign (renewal needs the CA key)"
		}
		return usagef(c, "--%s is for renewal, which is off with %s", set, why)
	}
	var grace time.Duration
	if v := c.String("renew-grace"); v != "" {
		var err error
		if grace, err = ca.ParseDuration(v); err != nil {
			return usagef(c, "--renew-grace: %v", err)
		}
	}
	rate := c.Int("renew-rate")
	if rate <= 0 {
		return usagef(c, "--renew-rate must be positive, got %d", rate)
	}
	o.renewCfg = renew.Config{Grace: grace, Keygen: c.Bool("renew-keygen"), Rate: float64(rate), Burst: 2 * rate}
	return nil
}

func runServe(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	o, err := parseServeFlags(c)
	if err != nil {
		return err
	}
	if err := checkServeEnrollFlags(c, o); err != nil {
		return err
	}
	signinCfg, err := signinConfig(c)
	if err != nil {
		return err
	}
	authority, err := openCA(c, e)
	if err != nil {
		return err
	}
	defer authority.Close()
	var signer crypto.Signer
	if !c.Bool("no-sign") {
		if signer, err = loadSigner(c, e, authority); err != nil {
			return err
		}
	}
	var tlsConfig *tls.Config
	var certs *certreload.Cert
	if o.listenTLS != "" {
		var closeCerts func()
		if certs, closeCerts, err = serveCertLoader(c, e); err != nil {
			return serverCertNameHint(authority, proxyStartHint(err))
		}
		defer closeCerts()
		tlsConfig = &tls.Config{GetCertificate: certs.GetCertificate, MinVersion: tls.VersionTLS12}
	}
	// Every listener is bound before anything is issued (the OCSP
	// responder's certificate, below): a port taken leaves the CA as it was.
	lns, err := bindServeListeners(o)
	if err != nil {
		return err
	}
	defer closeServeListeners(lns)
	cfg := o.cfg
	cfg.CA, cfg.Signer, cfg.Log, cfg.Now = authority, signer, e.stderr, e.now
	cfg.LockTimeout = c.Duration("lock-timeout")
	// The responder reads the database from request goroutines: it gets a
	// CA handle of its own, as the Server wants sole use of cfg.CA.
	ocspCA, err := openCA(c, e)
	if err != nil {
		return err
	}
	defer ocspCA.Close()
	responder, err := ocsp.New(ocsp.Config{
		// A root issues no leaves, a responder certificate included: its
		// OCSP answers (about its intermediates) carry its own signature.
		CA: ocspCA, Signer: signer, SignWithCAKey: c.Bool("ocsp-ca-key") || (ocspCA.IsRoot() && signer != nil),
		LockTimeout: cfg.LockTimeout, Log: e.stderr,
	})
	if err != nil {
		return err
	}
	cfg.OCSP, cfg.OCSPURL = responder, ocspCA.Settings.OCSPURL
	cfg.OnCRLChange, cfg.ExtraMetrics = responder.CRLChanged, responder.WriteMetrics
	closeEnroller, err := addServeEnroller(c, e, &cfg, signer, certs)
	if err != nil {
		return err
	}
	defer closeEnroller()
	closeSignin, err := addServeSignin(c, e, signinCfg, &cfg, signer)
	if err != nil {
		return err
	}
	defer closeSignin()
	closeACME, err := addServeACME(c, e, o, &cfg, signer)
	if err != nil {
		return err
	}
	defer closeACME()
	var srv *serve.Server
	if o.renew {
		// The renewals get a CA handle of their own too.
		renewCA, err := openCA(c, e)
		if err != nil {
			return err
		}
		defer renewCA.Close()
		rc := o.renewCfg
		rc.CA, rc.Signer, rc.LockTimeout, rc.Log, rc.Now = renewCA, signer, cfg.LockTimeout, e.stderr, e.now
		rc.CRL = func() *revoke.CRL { return srv.CRL() }
		renewer, err := renew.New(rc)
		if err != nil {
			return err
		}
		cfg.Renew = renewer
		// Ask for a client certificate, never require one: the other
		// paths are public, and /renew judges what it gets itself.
		pool := x509.NewCertPool()
		pool.AddCert(renewCA.Cert)
		tlsConfig.ClientAuth, tlsConfig.ClientCAs = tls.RequestClientCert, pool
	}
	srv, err = serve.New(cfg)
	if err != nil {
		if errors.Is(err, ca.ErrNoCRL) || errors.Is(err, ca.ErrNotRegular) {
			return withHint(err, "publish one with 'minica crl', or run serve with the CA key (without --no-sign)")
		}
		if errors.Is(err, ca.ErrStoreSwitched) {
			return withHint(err, "start serve again once 'minica store copy --use' is done: it opens the store the settings name then")
		}
		return err
	}
	return runServeListeners(c.Context, e, srv, o, lns, tlsConfig, certs)
}

// serveCertLoader loads serve's HTTPS certificate: of --server-cert, through
// a CA handle of its own (handshakes run beside the CRL watcher), which the
// function it returns closes, or from --cert and --key.
func serveCertLoader(c *cli.Context, e *env) (*certreload.Cert, func(), error) {
	certFile, keyFile := c.String("cert"), c.String("key")
	load := func() (tls.Certificate, error) { return tls.LoadX509KeyPair(certFile, keyFile) }
	closer := func() {}
	if name := c.String("server-cert"); name != "" {
		authority, err := openCA(c, e)
		if err != nil {
			return nil, nil, err
		}
		load = func() (tls.Certificate, error) { return authority.ServerTLSCertificate(name, e.now()) }
		closer = func() { authority.Close() }
	}
	r, err := newServeCert(load, e.now, e.stderr)
	if err != nil {
		closer()
		return nil, nil, err
	}
	return r, closer, nil
}

// serveListener is one listener of serve, bound, the flag that chose its
// address, and how the start line shows it (before the address).
type serveListener struct {
	ln         net.Listener
	flag, show string
}

// bindServeListeners binds the address of each listener flag given, in
// the order --listen, --listen-tls, --metrics-listen, --listen-ocsp; on a
// failure it closes those already bound.
func bindServeListeners(o *serveOptions) ([]serveListener, error) {
	var lns []serveListener
	for _, l := range []struct{ addr, flag, show string }{
		{o.listen, "--listen", "http://"}, {o.listenTLS, "--listen-tls", "https://"},
		{o.metrics, "--metrics-listen", "metrics on "}, {o.listenOCSP, "--listen-ocsp", "ocsp on http://"},
	} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			closeServeListeners(lns)
			return nil, listenHint(fmt.Errorf("listening on %q (%s): %w", l.addr, l.flag, err), l.addr, l.flag)
		}
		lns = append(lns, serveListener{ln, l.flag, l.show})
	}
	return lns, nil
}

func closeServeListeners(lns []serveListener) {
	for _, l := range lns {
		l.ln.Close()
	}
}

// runServeListeners serves on lns (bindServeListeners) until SIGTERM or
// SIGINT (or ctx) and drains for up to o.shutdown. SIGHUP reloads the
// HTTPS certificate.
func runServeListeners(ctx context.Context, e *env, srv *serve.Server, o *serveOptions, lns []serveListener, tlsConfig *tls.Config, certs *certreload.Cert) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	serveFuncs := map[string]func(net.Listener) error{
		"--listen":         func(ln net.Listener) error { return srv.Serve(ln, nil) },
		"--listen-tls":     func(ln net.Listener) error { return srv.Serve(ln, tlsConfig) },
		"--metrics-listen": srv.ServeOps,
		"--listen-ocsp":    srv.ServeOCSP,
	}
	var where []string
	for _, l := range lns {
		where = append(where, l.show+l.ln.Addr().String())
	}
	fmt.Fprintf(e.stdout, "minica serve: listening on %s\n", strings.Join(where, ", "))
	if o.acme.on {
		fmt.Fprintf(e.stdout, "minica serve: %s\n", acmeDirectoryLine(lns))
	}

	watchCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Watch(watchCtx)
	served := make(chan error, len(lns))
	for _, l := range lns {
		run := serveFuncs[l.flag]
		go func() { served <- run(l.ln) }()
	}
	var failed error
wait:
	for {
		select {
		case <-hup:
			if certs != nil {
				certs.Expire() // the CRL is followed without a signal
			}
		case err := <-served:
			if err != nil {
				failed = fmt.Errorf("serving: %w", err)
			}
			break wait
		case <-ctx.Done():
			fmt.Fprintf(e.stderr, "minica serve: stopping; draining requests for up to %s\n", o.shutdown)
			break wait
		}
	}
	sctx, scancel := context.WithTimeout(context.Background(), o.shutdown)
	defer scancel()
	if err := srv.Shutdown(sctx); errors.Is(err, context.DeadlineExceeded) {
		warnf(e.stderr, "requests still running after --shutdown-timeout %s were cut off", o.shutdown)
	}
	closeServeListeners(lns)
	cancel()
	if failed == nil {
		fmt.Fprintln(e.stderr, "minica serve: stopped")
	}
	return failed
}
