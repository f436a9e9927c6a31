package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/identity"
	"minica/serverconf"
)

func configCommand(e *env) *cli.Command {
	var subs []*cli.Command
	for _, s := range serverconf.WebServers {
		subs = append(subs, webConfigCommand(e, s))
	}
	subs = append(subs, cronCommand(e), systemdCommand(e), systemdProxyCommand(e), systemdServeCommand(e), systemdAgentCommand(e), crlFetchConfigCommand(e))
	return &cli.Command{
		Name:      "config",
		Usage:     "print a configuration for nginx, Apache, HAProxy, cron or systemd that uses this CA",
		ArgsUsage: "nginx|apache|haproxy|cron|systemd|systemd-proxy|systemd-serve|crl-fetch",
		Description: "Each subcommand prints a complete, commented file on stdout; its paths are\n" +
			"absolute paths into the CA directory (a relative --dir is resolved). The\n" +
			"front ends require a client certificate of this CA, check the CRL, accept\n" +
			"TLS 1.2+ only and forward the client identity under the header names of\n" +
			"'minica proxy' (X-SSL-Client-CN, -Email, -DN, -Serial, -Verify), after\n" +
			"removing any copy the client sent. On an intermediate they check the CRL of\n" +
			"every CA of the chain (crl-chain.pem: its CRL and the root's; --crl-file\n" +
			"names another file, as during a rotation). On a web server host with no CA\n" +
			"directory, --host-dir points them at copies of the files, and crl-fetch\n" +
			"keeps the CRL there fresh from 'minica serve' (docs/serve.md).\n\n" +
			"Example:\n   minica config nginx --server-cert app.example.com --upstream http://127.0.0.1:8080 > /etc/nginx/conf.d/app.conf\n" +
			"   minica config systemd --server nginx",
		Subcommands: subs,
		// The subcommands' flags, hidden, so that "config lighttpd --listen
		// 443" says the server is unknown rather than the flag.
		Flags: hiddenFlags(append(append(webFlags(serverconf.Nginx), jobFlags()...), hiddenServeFlags()...)),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef(c, "unknown server %q: want %s", c.Args().First(), configNames)
			}
			return usagef(c, "config needs a server: %s", configNames)
		},
	}
}

// configNames are the subcommands of config, for its errors.
const configNames = "nginx, apache, haproxy, cron, systemd, systemd-proxy, systemd-serve or crl-fetch"

// hiddenServeFlags are the flags of systemd-serve and crl-fetch that no
// other subcommand has.
func hiddenServeFlags() []cli.Flag {
	var flags []cli.Flag
	for _, n := range []string{"listen-tls", "metrics-listen", "user", "url", "crl-ca", "reload", "every"} {
		flags = append(flags, &cli.StringFlag{Name: n})
	}
	return append(flags, &cli.BoolFlag{Name: "no-sign", Hidden: true})
}

func hiddenFlags(flags []cli.Flag) []cli.Flag {
	for _, f := range flags {
		switch sf := f.(type) {
		case *cli.StringFlag:
			sf.Hidden = true
		case *cli.StringSliceFlag:
			sf.Hidden = true
		}
	}
	return flags
}

// frontFlags are the flags of every subcommand that writes a TLS front end.
func frontFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "server-cert", Usage: "the name of the server certificate in this CA (required)"},
		&cli.StringFlag{Name: "upstream", Usage: "where verified requests go: http://HOST:PORT or HOST:PORT (required)"},
		&cli.StringFlag{Name: "listen", Value: "443", Usage: "PORT or ADDR:PORT to accept clients on"},
		&cli.StringFlag{Name: "server-name", Usage: "the host name clients use (default: the certificate's first DNS name)"},
	}
}

// webFlags are frontFlags and --host-dir plus, for nginx and Apache, the
// identity header flags of 'minica proxy'.
func webFlags(server string) []cli.Flag {
	flags := append(frontFlags(), &cli.StringFlag{Name: "host-dir",
		Usage: "read every file from copies in `DIR` on a server host with no CA directory (see 'config crl-fetch')"},
		&cli.StringFlag{Name: "crl-file", Usage: "have the server read its CRLs from `FILE` instead of the CA directory's " +
			"(during a rotation: one holding the CRLs of both intermediates and of the root, see docs/hierarchy.md)"})
	if server == serverconf.HAProxy {
		return flags
	}
	return append(flags,
		&cli.StringFlag{Name: "headers", Usage: "identity header `PROFILE`, as 'minica proxy --headers' (default minica): " + strings.Join(configProfiles(), ", ")},
		&cli.StringSliceFlag{Name: "header", Usage: "add the identity header `NAME=FIELD`, as 'minica proxy --header' (repeatable; FIELD: " + strings.Join(serverconf.ServerFieldNames(server), ", ") + ")"},
	)
}

// checkHeaderFlags checks --headers and --header before anything is read,
// as usage errors.
func checkHeaderFlags(c *cli.Context, server string) error {
	err := serverconf.CheckHeaders(server, c.String("headers"), c.StringSlice("header"))
	var cannot *serverconf.CannotError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &cannot):
		return withHint(usagef(c, "--header: %v", err), "'minica proxy --header %s=%s' can send it", cannot.Header, cannot.Field)
	case errors.Is(err, identity.ErrUnknownProfile), err != nil && c.IsSet("headers") && !slices.Contains(configProfiles(), strings.ToLower(c.String("headers"))):
		return usagef(c, "--headers: %v (%s can render: %s)", err, server, strings.Join(configProfiles(), ", "))
	}
	return usagef(c, "--header: %v", err)
}

// configProfiles are the proxy's header profiles a web server can render
// (XFCC and RFC 9440 need forms no server variable has).
func configProfiles() []string {
	var out []string
	for _, p := range identity.Profiles {
		if p != identity.ProfileXFCC && p != identity.ProfileRFC9440 {
			out = append(out, p)
		}
	}
	return out
}

func webConfigCommand(e *env, server string) *cli.Command {
	return &cli.Command{
		Name:      server,
		Usage:     "print a " + server + " configuration for mutual TLS with this CA",
		ArgsUsage: " ",
		Description: "With --host-dir DIR the configuration reads DIR/ca.pem, DIR/crl.pem and the\n" +
			"server certificate as DIR/NAME.crt, DIR/NAME.chain.pem and DIR/NAME.key; its\n" +
			"comments say what to copy there, and 'minica config crl-fetch --server " + server + "'\n" +
			"keeps DIR/crl.pem fresh.\n\n" +
			"Example:\n   minica config " + server + " --server-cert app.example.com --upstream http://127.0.0.1:8080 --listen 443\n" +
			"   minica config " + server + " --server-cert app.example.com --upstream http://127.0.0.1:8080 --host-dir " + serverconf.DefaultHostDir(server),
		Flags: webFlags(server),
		Action: func(c *cli.Context) error {
			if server != serverconf.HAProxy {
				if err := checkHeaderFlags(c, server); err != nil {
					return err
				}
			}
			f, err := loadFront(c, e)
			if err != nil {
				return err
			}
			if dir := c.String("host-dir"); dir != "" {
				if !filepath.IsAbs(dir) {
					return usagef(c, "--host-dir: %q is not an absolute path", dir)
				}
				if c.String("crl-file") != "" {
					return usagef(c, "--crl-file and --host-dir exclude each other: with --host-dir the CRL is DIR/crl.pem")
				}
				f.OnHost(filepath.Clean(dir))
			}
			if file := c.String("crl-file"); file != "" {
				abs, err := filepath.Abs(file)
				if err != nil {
					return fmt.Errorf("--crl-file %q: %w", file, err)
				}
				f.CRLFile = abs
			}
			if server != serverconf.HAProxy {
				f.HeaderProfile, f.CustomHeaders = c.String("headers"), c.StringSlice("header")
			}
			text, err := serverconf.Web(server, f)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(e.stdout, text)
			return err
		},
	}
}

// loadFront checks the front-end flags, then reads the CA facts a front end
// needs: its files and the server certificate ca.ServerCert chooses.
func loadFront(c *cli.Context, e *env) (*serverconf.Front, error) {
	if err := wantArgs(c, 0, 0); err != nil {
		return nil, err
	}
	name := c.String("server-cert")
	if name == "" {
		return nil, withHint(usagef(c, "--server-cert is required"), "name a server certificate of this CA; 'minica list' shows them")
	}
	if c.String("upstream") == "" {
		return nil, usagef(c, "--upstream is required")
	}
	up, err := serverconf.ParseUpstream(c.String("upstream"))
	if err != nil {
		return nil, usagef(c, "--upstream: %v", err)
	}
	addr, port, err := serverconf.ParseListen(c.String("listen"))
	if err != nil {
		return nil, usagef(c, "--listen: %v", err)
	}
	authority, err := openCA(c, e)
	if err != nil {
		return nil, err
	}
	defer authority.Close()
	rec, err := configServerCert(authority, name, e.now())
	if err != nil {
		return nil, err
	}
	certFile, chainFile, keyFile, err := serverFiles(authority, rec)
	if err != nil {
		return nil, err
	}
	f := &serverconf.Front{
		Dir: authority.Dir().Path(), Name: rec.Name, Serial: rec.Serial, NotAfter: rec.NotAfter,
		CertFile: certFile, ChainFile: chainFile, KeyFile: keyFile, CAFile: authority.Path("chain.pem"),
		CRLFile: authority.Path(ca.CRLPEMFile), Depth: len(authority.Chain),
		ListenAddr: addr, ListenPort: port, ServerName: c.String("server-name"), Upstream: up,
		CRLLifetime: time.Duration(authority.Settings.CRLLifetime),
	}
	if f.ServerName == "" {
		f.ServerName = serverconf.DefaultServerName(rec.Name, rec.SANs)
	}
	if authority.IsIntermediate() {
		// The servers check a CRL for every CA of the chain.
		f.CRLFile = authority.Path(ca.CRLChainFile)
	}
	if _, err := authority.LoadCRL(); errors.Is(err, ca.ErrNoCRL) {
		warnf(e.stderr, "the CA has no published CRL yet; run 'minica crl' before starting the server")
	}
	return f, nil
}

// serverFiles are the absolute paths of rec's certificate, chain and key
// for a server configuration: the stable certs/NAME/current.* links when
// rec is the name's current certificate, so that a re-issue and a reload
// serve the successor without a new configuration, else rec's own files.
func serverFiles(authority *ca.CA, rec *ca.Record) (cert, chain, key string, err error) {
	cur, err := authority.Current(rec.Name)
	if err != nil {
		return "", "", "", err
	}
	if cur != nil && cur.Serial == rec.Serial {
		_, kerr := authority.Dir().Stat(ca.CurrentKeyPath(rec.Name))
		_, cerr := authority.Dir().Stat(ca.CurrentCertPath(rec.Name))
		if kerr == nil && cerr == nil { // a directory of an older minica has none until check
			return authority.Path(ca.CurrentCertPath(rec.Name)), authority.Path(ca.CurrentChainPath(rec.Name)), authority.Path(ca.CurrentKeyPath(rec.Name)), nil
		}
	}
	return authority.Path(rec.CertPath()), authority.Path(rec.ChainPath()), authority.Path(rec.KeyPath()), nil
}

// configServerCert is the server certificate ca.ServerCert chooses for
// name; when there is none, the error says why (see explainNoServerCert).
func configServerCert(authority *ca.CA, name string, now time.Time) (*ca.Record, error) {
	if err := ca.ValidateName(name); err != nil {
		return nil, fmt.Errorf("--server-cert: %w", err)
	}
	rec, err := authority.ServerCert(name, now)
	var none *ca.NoServerCertError
	if errors.As(err, &none) && len(none.Records) == 0 {
		return nil, nearestNamesFirst(authority, name, explainNoServerCert(none, now))
	}
	if errors.As(err, &none) {
		return nil, explainNoServerCert(none, now)
	}
	return rec, err
}

// explainNoServerCert says why a name has no certificate to serve, from
// the newest server record of that name, and what to do.
func explainNoServerCert(none *ca.NoServerCertError, now time.Time) error {
	name, recs, last := none.Name, none.Records, none.Newest
	if len(recs) == 0 {
		return withHint(fmt.Errorf("no certificate named %q", name),
			"issue one with 'minica issue server %s --dns HOST', or see 'minica list'", name)
	}
	reissue := fmt.Sprintf("issue a new one with 'minica issue server %s --dns HOST --force'", name)
	switch {
	case last == nil:
		return withHint(fmt.Errorf("%q is a %s certificate, not a server certificate", name, recs[len(recs)-1].Profile),
			"issue one with 'minica issue server NAME --dns HOST'")
	case last.Status == ca.StatusRevoked:
		return withHint(fmt.Errorf("the server certificate %q (serial %s) is revoked", name, last.Serial), "%s", reissue)
	case last.StatusAt(now) == ca.StatusExpired:
		return withHint(fmt.Errorf("the server certificate %q (serial %s) expired at %s", name, last.Serial, day(last.NotAfter)), "%s", reissue)
	case last.StatusAt(now) == ca.StatusValid && now.Before(last.NotBefore):
		return withHint(fmt.Errorf("the server certificate %q (serial %s) is not valid before %s", name, last.Serial, day(last.NotBefore)),
			"check the clock of this machine, or %s", reissue)
	case last.StatusAt(now) == ca.StatusValid:
		return withHint(fmt.Errorf("minica does not hold the key of the server certificate %q (serial %s)", name, last.Serial),
			"it was signed from a CSR; issue one whose key minica keeps with 'minica issue server %s --dns HOST --force'", name)
	}
	return withHint(fmt.Errorf("the server certificate %q (serial %s) is %s", name, last.Serial, last.Status), "run 'minica check'")
}
