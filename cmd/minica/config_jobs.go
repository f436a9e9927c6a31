package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/serverconf"
)

func jobFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "server", Usage: "what to reload after publishing: nginx, apache, haproxy or proxy (required)"},
		&cli.StringFlag{Name: "password-file", Usage: "the file the job reads the CA key's password from (needed when the key is encrypted)"},
		minicaPathFlag(),
	}
}

func minicaPathFlag() cli.Flag {
	return &cli.StringFlag{Name: "minica", Usage: "the path of the minica binary on the server (default: this one)"}
}

func cronCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "cron",
		Usage:       "print an /etc/cron.d job that republishes the CRL and reloads the server",
		ArgsUsage:   " ",
		Description: "The job runs at most every quarter of the CA's CRL lifetime (daily for 7d).\n\nExample:\n   minica config cron --server nginx > /etc/cron.d/minica-crl",
		Flags:       jobFlags(),
		Action:      func(c *cli.Context) error { return runJob(c, e, serverconf.Cron) },
	}
}

func systemdCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "systemd",
		Usage:       "print a systemd service and timer that republish the CRL and reload the server",
		ArgsUsage:   " ",
		Description: "The timer fires at most every quarter of the CA's CRL lifetime (daily for 7d).\n\nExample:\n   minica config systemd --server apache",
		Flags:       jobFlags(),
		Action:      func(c *cli.Context) error { return runJob(c, e, serverconf.Systemd) },
	}
}

func systemdProxyCommand(e *env) *cli.Command {
	flags := append(frontFlags(), minicaPathFlag(),
		&cli.StringFlag{Name: "password-file", Usage: "the file the CRL job reads the CA key's password from (needed when the key is encrypted)"})
	return &cli.Command{
		Name:      "systemd-proxy",
		Usage:     "print a systemd service that runs 'minica proxy', and a timer that republishes the CRL",
		ArgsUsage: " ",
		Description: "The service runs 'minica proxy' with the given flags; the proxy reloads the\n" +
			"CRL when the file changes (and on SIGHUP, 'systemctl reload minica-proxy').\n\n" +
			"Example:\n   minica config systemd-proxy --server-cert app.example.com --upstream http://127.0.0.1:8080 --listen 443",
		Flags: flags,
		Action: func(c *cli.Context) error {
			f, err := loadFront(c, e)
			if err != nil {
				return err
			}
			j, err := loadJob(c, e, serverconf.Proxy)
			if err != nil {
				return err
			}
			return printConfig(e, func() (string, error) { return serverconf.SystemdProxy(f, j) })
		},
	}
}

func runJob(c *cli.Context, e *env, write func(*serverconf.Job) (string, error)) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	j, err := loadJob(c, e, c.String("server"))
	if err != nil {
		return err
	}
	return printConfig(e, func() (string, error) { return write(j) })
}

// printConfig prints what write returns.
func printConfig(e *env, write func() (string, error)) error {
	text, err := write()
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(e.stdout, text)
	return err
}

// loadJob checks the job flags, then reads the CA facts a CRL job needs.
func loadJob(c *cli.Context, e *env, server string) (*serverconf.Job, error) {
	if !slices.Contains(serverconf.JobServers, server) {
		if server == "" {
			return nil, usagef(c, "--server is required: nginx, apache, haproxy or proxy")
		}
		return nil, usagef(c, "--server: unknown server %q: want nginx, apache, haproxy or proxy", server)
	}
	bin, err := minicaPath(c)
	if err != nil {
		return nil, err
	}
	authority, err := openCA(c, e)
	if err != nil {
		return nil, err
	}
	defer authority.Close()
	j := &serverconf.Job{Server: server, Minica: bin, Dir: authority.Dir().Path(), CRLLifetime: time.Duration(authority.Settings.CRLLifetime)}
	if err := serverconf.CheckLifetime(j.CRLLifetime); err != nil {
		return nil, withHint(err, "lengthen the CA's CRL lifetime in settings.json")
	}
	src, err := authority.KeySource()
	if err != nil {
		return nil, err
	}
	if src.Kind == ca.KeyInToken {
		return nil, withHint(fmt.Errorf("the CA key is in %s, and the job would need its PIN: config does not write PINs into jobs", src.URI.TokenName()),
			"run 'minica crl --pin-file FILE' from a job of your own, with a PIN file only its user can read")
	}
	if pw := c.String("password-file"); pw != "" {
		if j.PasswordFile, err = filepath.Abs(pw); err != nil {
			return nil, fmt.Errorf("resolving --password-file %q: %w", pw, err)
		}
	} else if src.Kind == ca.KeyInEncryptedFile {
		return nil, withHint(fmt.Errorf("the CA key is encrypted and the job runs unattended"),
			"pass --password-file FILE, a file only root can read that holds the password")
	}
	return j, nil
}

// minicaPath is --minica, or the absolute path of this executable.
func minicaPath(c *cli.Context) (string, error) {
	if p := c.String("minica"); p != "" {
		if !filepath.IsAbs(p) {
			return "", usagef(c, "--minica: %q is not an absolute path", p)
		}
		return p, nil
	}
	p, err := os.Executable()
	if err != nil {
		return "", withHint(fmt.Errorf("finding the minica binary: %w", err), "pass --minica PATH")
	}
	return p, nil
}
