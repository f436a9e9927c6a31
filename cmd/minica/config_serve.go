package main

import (
	"errors"
	"fmt"
	"os/user"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/serverconf"
)

func systemdServeCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "systemd-serve",
		Usage:     "print a hardened systemd service that runs 'minica serve' on the CA host",
		ArgsUsage: " ",
		Description: "The service runs 'minica serve' with the given listeners, as --user, and may\n" +
			"write nothing but the CA directory. See docs/serve.md.\n\n" +
			"Example:\n   minica config systemd-serve --listen :8080 > /etc/systemd/system/minica-serve.service\n" +
			"   minica config systemd-serve --listen :80 --listen-tls :443 --server-cert pki.example.com",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", Usage: "serve HTTP on `ADDR:PORT` (\"\" for none)"},
			&cli.StringFlag{Name: "listen-tls", Usage: "serve HTTPS on `ADDR:PORT` too, with --server-cert"},
			&cli.StringFlag{Name: "server-cert", Usage: "the `NAME` of the server certificate of this CA for --listen-tls"},
			&cli.StringFlag{Name: "metrics-listen", Usage: "serve /metrics and /healthz on a separate `ADDR:PORT`"},
			&cli.BoolFlag{Name: "no-sign", Usage: "run serve without the CA key (it never re-signs the CRL)"},
			&cli.StringFlag{Name: "password-file", Usage: "the `FILE` serve reads the CA key's password from (needed when the key is encrypted)"},
			&cli.StringFlag{Name: "user", Usage: "the `USER` the service runs as, the CA directory's owner (default: the user running this command; none for root)"},
			minicaPathFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0, 0); err != nil {
				return err
			}
			bin, err := minicaPath(c)
			if err != nil {
				return err
			}
			authority, err := openCA(c, e)
			if err != nil {
				return err
			}
			defer authority.Close()
			s := &serverconf.Serve{
				Minica: bin, Dir: authority.Dir().Path(), User: c.String("user"),
				Listen: c.String("listen"), ListenTLS: c.String("listen-tls"), ServerCert: c.String("server-cert"),
				MetricsListen: c.String("metrics-listen"), NoSign: c.Bool("no-sign"),
			}
			if !c.IsSet("user") {
				if u, err := user.Current(); err == nil && u.Uid != "0" {
					s.User = u.Username
				}
			}
			if s.ServerCert != "" && s.ListenTLS != "" {
				if _, err := configServerCert(authority, s.ServerCert, e.now()); err != nil {
					return err
				}
			}
			if pw := c.String("password-file"); pw != "" {
				if s.PasswordFile, err = filepath.Abs(pw); err != nil {
					return fmt.Errorf("resolving --password-file %q: %w", pw, err)
				}
			} else if !s.NoSign {
				src, err := authority.KeySource()
				if err != nil {
					return err
				}
				switch src.Kind {
				case ca.KeyInToken:
					warnf(e.stderr, "the CA key is in %s: give the service its PIN in a drop-in only root can read (Environment=MINICA_PIN=...)", src.URI.TokenName())
				case ca.KeyInEncryptedFile:
					return withHint(errors.New("the CA key is encrypted and the service runs unattended"),
						"pass --password-file FILE, a file only the service's user can read, or --no-sign")
				}
			}
			text, err := serverconf.SystemdServe(s)
			if err != nil {
				return usagef(c, "%v", err)
			}
			_, err = fmt.Fprint(e.stdout, text)
			return err
		},
	}
}

func crlFetchConfigCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "crl-fetch",
		Usage:     "print a systemd timer that fetches the CRL from 'minica serve' and reloads nginx, Apache or HAProxy when it changed",
		ArgsUsage: " ",
		Description: "For an nginx, Apache or HAProxy host with no CA directory. Every --every the\n" +
			"job runs 'minica crl fetch URL': one conditional GET; a new CRL is checked\n" +
			"against --host-dir/ca.pem as the proxy checks one, written atomically to\n" +
			"--host-dir/crl.pem (PEM, which the three servers read), and only then is\n" +
			"the server reloaded. An unchanged CRL reloads nothing; a refused one is\n" +
			"never installed. Point the server at it with 'minica config SERVER\n" +
			"--host-dir DIR'. The URL defaults to the CA's CRL URL. See docs/serve.md.\n\n" +
			"Example:\n   minica config crl-fetch --server nginx --url http://pki.example.com/crl.der\n" +
			"   minica config crl-fetch --server apache --reload 'systemctl reload httpd'",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "server", Usage: "the server on the host: nginx, apache or haproxy (required)"},
			&cli.StringFlag{Name: "url", Usage: "the CRL's http or https `URL` (default: the CA's CRL URL)"},
			&cli.StringFlag{Name: "host-dir", Usage: "the `DIR` of ca.pem and crl.pem on the host (default: /etc/SERVER/minica, /etc/apache2/minica for apache)"},
			&cli.StringFlag{Name: "crl-ca", Usage: "for an https URL, the CA `FILE` on the host that verifies its server (default: the system roots)"},
			caFingerprintFlag(),
			&cli.StringFlag{Name: "reload", Usage: "the shell `COMMAND` that reloads the server (default: systemctl try-reload-or-restart UNIT)"},
			&cli.StringFlag{Name: "every", Value: "1m", Usage: "fetch every `DURATION`, from 10s to 1d"},
			minicaPathFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0, 0); err != nil {
				return err
			}
			pin, err := parseCAPin(c)
			if err != nil {
				return err
			}
			f := &serverconf.Fetch{Server: c.String("server"), URL: c.String("url"),
				HostDir: c.String("host-dir"), CRLCA: c.String("crl-ca"), Reload: c.String("reload"),
				CAFingerprint: hexOrEmpty(pin)}
			switch f.Server {
			case serverconf.Nginx, serverconf.Apache, serverconf.HAProxy:
			case "":
				return usagef(c, "--server is required: nginx, apache or haproxy")
			case serverconf.Proxy:
				return withHint(usagef(c, "--server: 'minica proxy' fetches the CRL itself"), "run it with --crl URL")
			default:
				return usagef(c, "--server: unknown server %q: want nginx, apache or haproxy", f.Server)
			}
			every, err := ca.ParseDuration(c.String("every"))
			if err != nil {
				return usagef(c, "--every: %v", err)
			}
			f.Every = every
			if f.Minica, err = minicaPath(c); err != nil {
				return err
			}
			if f.URL == "" {
				authority, err := openCA(c, e)
				if err != nil {
					return withHint(err, "pass --url, the URL 'minica serve' publishes the CRL at")
				}
				f.URL = authority.Settings.CRLURL
				authority.Close()
				if f.URL == "" {
					return withHint(usagef(c, "--url is required: the CA has no CRL URL"),
						"pass --url (where 'minica serve' publishes the CRL), or set the CA's with 'minica crl url URL'")
				}
			}
			text, err := serverconf.CRLFetch(f)
			if err != nil {
				return usagef(c, "%v", err)
			}
			_, err = fmt.Fprint(e.stdout, text)
			return err
		},
	}
}
