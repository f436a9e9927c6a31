package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

// configServers are the front ends `minica config` writes a configuration for.
var configServers = []string{"nginx", "apache", "haproxy"}

func configCommand(e *env) *cli.Command {
	var subs []*cli.Command
	for _, s := range configServers {
		subs = append(subs, webConfigCommand(e, s))
	}
	subs = append(subs, cronCommand(e), systemdCommand(e), systemdProxyCommand(e))
	return &cli.Command{
		Name:      "config",
		Usage:     "print a configuration for nginx, Apache, HAProxy, cron or systemd that uses this CA",
		ArgsUsage: "nginx|apache|haproxy|cron|systemd|systemd-proxy",
		Description: "Each subcommand prints a complete, commented file on stdout; paths point into\n" +
			"the CA directory. The front ends require a client certificate of this CA,\n" +
			"check the CRL, accept TLS 1.2+ only and forward the client identity under\n" +
			"the header names of 'minica proxy' (X-SSL-Client-CN, -Email, -DN, -Serial,\n" +
			"-Verify), after removing any copy the client sent.\n\n" +
			"Example:\n   minica config nginx --server-cert app.example.com --upstream http://127.0.0.1:8080 > /etc/nginx/conf.d/app.conf\n" +
			"   minica config systemd --server nginx",
		Subcommands: subs,
		// The subcommands' flags, hidden, so that "config lighttpd --listen
		// 443" says the server is unknown rather than the flag.
		Flags: hiddenFlags(append(frontFlags(), jobFlags()...)),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef(c, "unknown server %q: want nginx, apache, haproxy, cron, systemd or systemd-proxy", c.Args().First())
			}
			return usagef(c, "config needs a server: nginx, apache, haproxy, cron, systemd or systemd-proxy")
		},
	}
}

func hiddenFlags(flags []cli.Flag) []cli.Flag {
	for _, f := range flags {
		if sf, ok := f.(*cli.StringFlag); ok {
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

// front is what a front-end configuration needs, resolved from the flags and
// the CA directory. Every path is absolute.
type front struct {
	Dir        string // the CA directory
	Name       string // the server certificate's name
	Serial     string
	NotAfter   string
	CertFile   string // the leaf alone
	ChainFile  string // the leaf followed by the CA chain
	KeyFile    string
	CAFile     string // the CA chain clients must chain to
	CRLFile    string // PEM
	Depth      int    // certificates above the client's, up to the root
	ListenAddr string // "" for every address
	ListenPort string
	ServerName string
	Upstream   *url.URL // http, with host and port
	CRLLife    string   // the CA's CRL lifetime, e.g. "7d"
}

// Listen is ADDR:PORT, or PORT alone when no address was given.
func (f *front) Listen() string {
	if f.ListenAddr == "" {
		return f.ListenPort
	}
	return net.JoinHostPort(f.ListenAddr, f.ListenPort)
}

// UpstreamHostPort is the upstream's HOST:PORT.
func (f *front) UpstreamHostPort() string { return f.Upstream.Host }

// Intermediate reports whether the CA is an intermediate under another CA.
func (f *front) Intermediate() bool { return f.Depth > 1 }

func loadFront(c *cli.Context, e *env) (*front, error) {
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
	up, err := parseUpstream(c.String("upstream"))
	if err != nil {
		return nil, usagef(c, "--upstream: %v", err)
	}
	addr, port, err := parseListen(c.String("listen"))
	if err != nil {
		return nil, usagef(c, "--listen: %v", err)
	}
	authority, err := openCA(c, e)
	if err != nil {
		return nil, err
	}
	defer authority.Close()
	rec, err := serverRecord(authority, name, e)
	if err != nil {
		return nil, err
	}
	f := &front{
		Dir: authority.Path("."), Name: rec.Name, Serial: rec.Serial, NotAfter: day(rec.NotAfter),
		CertFile: authority.Path(rec.CertPath()), ChainFile: authority.Path(rec.ChainPath()),
		KeyFile: authority.Path(rec.KeyPath()), CAFile: authority.Path("chain.pem"),
		CRLFile: authority.Path(ca.CRLPEMFile), Depth: len(authority.Chain),
		ListenAddr: addr, ListenPort: port, ServerName: c.String("server-name"), Upstream: up,
		CRLLife: ca.FormatDuration(crlLifetime(authority)),
	}
	f.Dir = strings.TrimSuffix(f.Dir, "/.")
	if f.ServerName == "" {
		f.ServerName = firstDNS(rec)
	}
	if _, err := authority.LoadCRL(); errors.Is(err, ca.ErrNoCRL) {
		warnf(e.stderr, "the CA has no published CRL yet; run 'minica crl' before starting the server")
	}
	return f, nil
}

// serverRecord finds the newest usable server certificate named name.
func serverRecord(authority *ca.CA, name string, e *env) (*ca.Record, error) {
	if err := ca.ValidateName(name); err != nil {
		return nil, fmt.Errorf("--server-cert: %w", err)
	}
	recs, err := authority.RecordsByName(name)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, withHint(fmt.Errorf("no certificate named %q", name),
			"issue one with 'minica issue server %s --dns HOST', or see 'minica list'", name)
	}
	now := e.now()
	var last *ca.Record
	for i := len(recs) - 1; i >= 0; i-- { // newest first
		r := recs[i]
		if r.Profile != ca.Server {
			continue
		}
		if last == nil {
			last = r
		}
		if r.StatusAt(now) == ca.StatusValid && r.HasKey {
			return r, nil
		}
	}
	reissue := fmt.Sprintf("issue a new one with 'minica issue server %s --dns HOST --force'", name)
	switch {
	case last == nil:
		return nil, withHint(fmt.Errorf("%q is a %s certificate, not a server certificate", name, recs[len(recs)-1].Profile),
			"issue one with 'minica issue server NAME --dns HOST'")
	case last.Status == ca.StatusRevoked:
		return nil, withHint(fmt.Errorf("the server certificate %q (serial %s) is revoked", name, last.Serial), "%s", reissue)
	case last.StatusAt(now) == ca.StatusExpired:
		return nil, withHint(fmt.Errorf("the server certificate %q (serial %s) expired at %s", name, last.Serial, day(last.NotAfter)), "%s", reissue)
	case last.StatusAt(now) == ca.StatusValid:
		return nil, withHint(fmt.Errorf("minica does not hold the key of the server certificate %q (serial %s)", name, last.Serial),
			"it was signed from a CSR; issue one whose key minica keeps with 'minica issue server %s --dns HOST --force'", name)
	}
	return nil, withHint(fmt.Errorf("the server certificate %q (serial %s) is %s", name, last.Serial, last.Status), "run 'minica check'")
}

func firstDNS(r *ca.Record) string {
	for _, s := range r.SANs {
		if h, ok := strings.CutPrefix(s, "dns:"); ok {
			return h
		}
	}
	for _, s := range r.SANs {
		if h, ok := strings.CutPrefix(s, "ip:"); ok {
			return h
		}
	}
	return r.Name
}

// parseListen splits "PORT" or "ADDR:PORT"; addr is "" for the first form.
func parseListen(s string) (addr, port string, err error) {
	if !strings.Contains(s, ":") {
		port = s
	} else if addr, port, err = net.SplitHostPort(s); err != nil {
		return "", "", fmt.Errorf("%q is not PORT or ADDR:PORT", s)
	} else if addr != "" && net.ParseIP(addr) == nil {
		return "", "", fmt.Errorf("%q: the address must be an IP address", s)
	}
	if n, perr := strconv.Atoi(port); perr != nil || n < 1 || n > 65535 {
		return "", "", fmt.Errorf("%q: the port must be a number from 1 to 65535", s)
	}
	return addr, port, nil
}

// parseUpstream accepts http://HOST[:PORT][/] or HOST:PORT.
func parseUpstream(s string) (*url.URL, error) {
	raw := s
	if !strings.Contains(s, "://") {
		_, port, err := net.SplitHostPort(s)
		if _, perr := strconv.Atoi(port); err != nil || perr != nil {
			return nil, fmt.Errorf("%q: want http://HOST:PORT or HOST:PORT", s)
		}
		raw = "http://" + s
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL", s)
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("%q: only http upstreams are supported (keep the app on a loopback or private address)", s)
	}
	if u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("%q: want http://HOST:PORT", s)
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), "80")
	}
	u.Path = ""
	return u, nil
}

// crlLifetime is the CA's CRL lifetime setting.
func crlLifetime(authority *ca.CA) time.Duration {
	return time.Duration(authority.Settings.CRLLifetime)
}
