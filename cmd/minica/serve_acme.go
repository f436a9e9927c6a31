package main

import (
	"crypto"
	"fmt"
	"net/netip"

	"github.com/urfave/cli/v2"

	"minica/serve"
	"minica/serve/acme"
	"minica/serve/acme/validate"
)

// serveACMEFlags are serve's flags for its ACME server.
func serveACMEFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "acme", Usage: "answer ACME (RFC 8555) at /acme/directory on --listen-tls: certificates for the names of 'minica acme account add' bindings"},
		&cli.BoolFlag{Name: "acme-no-eab", Usage: "with --acme, let anyone who reaches serve create an ACME account, without an external account binding: for a closed network only"},
		&cli.StringSliceFlag{Name: "acme-validate-allow", Usage: "let the challenge validator connect to `CIDR` although refused by default (loopback, link-local, multicast; see docs/acme.md); repeatable"},
		&cli.StringFlag{Name: "acme-resolver", Usage: "resolve names and dns-01 records with the DNS server at `HOST:PORT` (default: the system's)"},
		&cli.IntFlag{Name: "acme-http-port", Value: 80, Usage: "validate http-01 on `PORT`"},
		&cli.IntFlag{Name: "acme-tls-port", Value: 443, Usage: "validate tls-alpn-01 (and follow https redirects) on `PORT`"},
	}
}

// acmeOptions are the ACME flags, checked.
type acmeOptions struct {
	on    bool
	noEAB bool
	vcfg  validate.Config
}

// parseServeACMEFlags checks the ACME flags against the others.
func parseServeACMEFlags(c *cli.Context, o *serveOptions) error {
	a := &o.acme
	a.on, a.noEAB = c.Bool("acme"), c.Bool("acme-no-eab")
	if !a.on {
		for _, f := range []string{"acme-no-eab", "acme-validate-allow", "acme-resolver", "acme-http-port", "acme-tls-port"} {
			if c.IsSet(f) {
				return usagef(c, "--%s goes with --acme", f)
			}
		}
		return nil
	}
	switch {
	case o.listenTLS == "":
		return usagef(c, "--acme needs --listen-tls: ACME is served over HTTPS only")
	case c.Bool("no-sign"):
		return usagef(c, "--acme and --no-sign exclude each other: ACME issues certificates with the CA key")
	}
	for _, f := range []string{"acme-http-port", "acme-tls-port"} {
		if p := c.Int(f); p <= 0 || p > 65535 {
			return usagef(c, "--%s must be a port from 1 to 65535, got %d", f, p)
		}
	}
	a.vcfg = validate.Config{HTTPPort: c.Int("acme-http-port"), TLSPort: c.Int("acme-tls-port"), Resolver: c.String("acme-resolver")}
	if r := a.vcfg.Resolver; r != "" {
		if _, err := netip.ParseAddrPort(r); err != nil {
			return usagef(c, "--acme-resolver %q: want the DNS server's IP:PORT, e.g. 10.0.0.53:53", r)
		}
	}
	for _, s := range c.StringSlice("acme-validate-allow") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return usagef(c, "--acme-validate-allow %q: want a CIDR such as 127.0.0.1/32", s)
		}
		a.vcfg.Allow = append(a.vcfg.Allow, p.Masked())
	}
	return nil
}

// addServeACME gives cfg the ACME server of serve --acme, on a CA handle
// of its own, and adds its metrics; it warns loudly of --acme-no-eab.
// Without --acme it does nothing. The function it returns stops it.
func addServeACME(c *cli.Context, e *env, o *serveOptions, cfg *serve.Config, signer crypto.Signer) (func(), error) {
	if !o.acme.on {
		return func() {}, nil
	}
	v, err := validate.New(o.acme.vcfg)
	if err != nil {
		return nil, err
	}
	authority, err := openCA(c, e)
	if err != nil {
		return nil, err
	}
	s, err := acme.New(acme.Config{CA: authority, Signer: signer, NoEAB: o.acme.noEAB, Validator: v,
		LockTimeout: c.Duration("lock-timeout"), Log: e.stderr, Now: e.now})
	if err != nil {
		authority.Close()
		return nil, err
	}
	if o.acme.noEAB {
		warnf(e.stderr, "--acme-no-eab: anyone who reaches %s can create an ACME account and get certificates for any name this CA allows", o.listenTLS)
	}
	cfg.ACME = s
	addMetrics(cfg, s.WriteMetrics)
	return func() { s.Close(); authority.Close() }, nil
}

// acmeDirectoryLine names the ACME directory on the bound HTTPS
// listener, for the start line.
func acmeDirectoryLine(lns []serveListener) string {
	for _, l := range lns {
		if l.flag == "--listen-tls" {
			return fmt.Sprintf("ACME directory at https://%s%s", l.ln.Addr(), acme.DirectoryPath)
		}
	}
	return ""
}
