package main

import (
	"crypto"
	"crypto/tls"
	"net"

	"github.com/urfave/cli/v2"

	"minica/internal/certreload"
	"minica/serve"
	"minica/serve/enroll"
)

// serveEnrollFlags are serve's flags for enrollment links (minica enroll).
func serveEnrollFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "enroll", Usage: "answer enrollment links (/enroll/TOKEN, see minica enroll) on --listen-tls: issue client certificates with the CA key"},
		&cli.BoolFlag{Name: "enroll-http", Usage: "with --enroll, also answer them on plain HTTP, for tests: only when --listen is a loopback address"},
		&cli.IntFlag{Name: "enroll-rate", Value: enroll.DefaultRate, Usage: "allow `N` enrollment requests a minute per source address (bursts of 10)"},
		&cli.IntFlag{Name: "enroll-rate-total", Value: enroll.DefaultTotalRate, Usage: "allow `N` enrollment requests a minute from all addresses together (bursts of a fifth)"},
	}
}

// checkServeEnrollFlags checks the enrollment flags against the others.
func checkServeEnrollFlags(c *cli.Context, o *serveOptions) error {
	if !c.Bool("enroll") {
		for _, f := range []string{"enroll-http", "enroll-rate", "enroll-rate-total"} {
			if c.IsSet(f) {
				return usagef(c, "--%s goes with --enroll", f)
			}
		}
		return nil
	}
	switch {
	case c.Bool("no-sign"):
		return usagef(c, "--enroll and --no-sign exclude each other: enrollment issues certificates with the CA key")
	case c.Bool("enroll-http") && (o.listen == "" || !isLoopback(o.listen)):
		return usagef(c, "--enroll-http needs --listen on a loopback address (127.0.0.1:PORT): links carry secrets, and plain HTTP is for tests only")
	case !c.Bool("enroll-http") && o.listenTLS == "":
		return usagef(c, "--enroll needs --listen-tls: enrollment links are answered over HTTPS only")
	case c.Int("enroll-rate") <= 0 || c.Int("enroll-rate-total") <= 0:
		return usagef(c, "--enroll-rate and --enroll-rate-total must be positive")
	}
	return nil
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// addServeEnroller gives cfg the enrollment handler of serve --enroll, on
// a CA handle of its own, with the HTTPS certificate (when there is one) as
// the signer of Apple profiles, and adds its metrics; without --enroll it
// does nothing. The function it returns releases the handle.
func addServeEnroller(c *cli.Context, e *env, cfg *serve.Config, signer crypto.Signer, certs *certreload.Cert) (func(), error) {
	if !c.Bool("enroll") {
		return func() {}, nil
	}
	authority, err := openCA(c, e)
	if err != nil {
		return nil, err
	}
	ec := enroll.Config{
		CA: authority, Signer: signer, LockTimeout: c.Duration("lock-timeout"), Log: e.stderr, Now: e.now,
		AllowHTTP: c.Bool("enroll-http"), Rate: c.Int("enroll-rate"), TotalRate: c.Int("enroll-rate-total"),
		TotalBurst: max(c.Int("enroll-rate-total")/5, 1),
	}
	if certs != nil {
		ec.SigningCert = func() (*tls.Certificate, error) { return certs.GetCertificate(nil) }
	}
	h, err := enroll.New(ec)
	if err != nil {
		authority.Close()
		return nil, err
	}
	cfg.Enroll = h
	addMetrics(cfg, h.WriteMetrics)
	return func() { authority.Close() }, nil
}
