package main

import (
	"fmt"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"minica/agent"
	"minica/serverconf"
)

func systemdAgentCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "systemd-agent",
		Usage:     "print a hardened systemd service that runs 'minica agent' for one certificate on a service host",
		ArgsUsage: " ",
		Description: "The service keeps --cert fresh against 'minica serve' at --url, as --user, and\n" +
			"may write nothing but the directories of the certificate, key and chain. It\n" +
			"needs no CA directory. See docs/agent.md.\n\n" +
			"Example:\n   minica config systemd-agent --url https://pki.example.com:8443 --ca /etc/app/ca.pem \\\n" +
			"     --cert /etc/app/app.crt --key /etc/app/app.key --exec 'systemctl reload app' --user app",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", Usage: "the HTTPS `URL` of 'minica serve' (required)"},
			&cli.StringFlag{Name: "ca", Usage: "the CA certificate `FILE` on the host (required)"},
			caFingerprintFlag(),
			&cli.StringFlag{Name: "cert", Usage: "the certificate `FILE` to keep fresh (required)"},
			&cli.StringFlag{Name: "key", Usage: "its key `FILE` (required)"},
			&cli.StringFlag{Name: "chain", Usage: "the chain `FILE` the agent writes"},
			&cli.StringFlag{Name: "token-file", Usage: "the one-time token `FILE` ('minica token') that gets the first certificate while --cert does not exist"},
			&cli.StringFlag{Name: "exec", Usage: "the `COMMAND` run after each renewal (no shell: quotes only)"},
			&cli.StringFlag{Name: "renew-at", Usage: "renew once this `FRACTION` of the lifetime has passed (default: the agent's, 0.66)"},
			&cli.StringFlag{Name: "name", Usage: "the unit is minica-agent-`NAME`.service (default: the certificate file's name without extension)"},
			&cli.StringFlag{Name: "user", Usage: "the `USER` the service runs as, the files' owner (default: the user running this command; none for root)"},
			minicaPathFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0, 0); err != nil {
				return err
			}
			for _, f := range []string{"url", "ca", "cert", "key"} {
				if c.String(f) == "" {
					return usagef(c, "--%s is required", f)
				}
			}
			bin, err := minicaPath(c)
			if err != nil {
				return err
			}
			pin, err := parseCAPin(c)
			if err != nil {
				return err
			}
			a := &serverconf.Agent{Minica: bin, URL: c.String("url"), User: c.String("user"), Name: c.String("name"),
				CAFingerprint: hexOrEmpty(pin)}
			for _, p := range []struct {
				flag string
				dst  *string
			}{{"ca", &a.CAFile}, {"cert", &a.CertFile}, {"key", &a.KeyFile}, {"chain", &a.ChainFile}, {"token-file", &a.TokenFile}} {
				if v := c.String(p.flag); v != "" {
					if *p.dst, err = filepath.Abs(v); err != nil {
						return fmt.Errorf("resolving --%s %q: %w", p.flag, v, err)
					}
				}
			}
			if a.Name == "" {
				a.Name = strings.TrimSuffix(filepath.Base(a.CertFile), filepath.Ext(a.CertFile))
			}
			if c.IsSet("exec") {
				if a.Exec, err = agent.SplitCommand(c.String("exec")); err != nil {
					return usagef(c, "--exec %q: %v", c.String("exec"), err)
				}
			}
			if v := c.String("renew-at"); v != "" {
				if a.RenewAt, err = strconv.ParseFloat(v, 64); err != nil || a.RenewAt <= 0 {
					return usagef(c, "--renew-at %q is not a fraction from above 0 to below 1", v)
				}
			}
			if !c.IsSet("user") {
				if u, err := user.Current(); err == nil && u.Uid != "0" {
					a.User = u.Username
				}
			}
			text, err := serverconf.SystemdAgent(a)
			if err != nil {
				return usagef(c, "%v", err)
			}
			_, err = fmt.Fprint(e.stdout, text)
			return err
		},
	}
}
