package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/urfave/cli/v2"

	"minica/agent"
	"minica/ca"
	"minica/formats"
)

func agentCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "agent",
		Usage:     "keep a service's certificate fresh: renew it at 'minica serve' before it expires",
		ArgsUsage: " ",
		Description: "Renews the certificate in --cert once --renew-at of its lifetime has passed, at\n" +
			"the HTTPS listener of 'minica serve' (--url), authenticated by the certificate\n" +
			"itself: a new key of the same type is made here and only a CSR is sent. The new\n" +
			"certificate, key and chain replace the old files atomically, with their modes\n" +
			"and owners; then --exec runs, split into words like a shell quotes them but\n" +
			"run directly, never by a shell. Failures are retried with exponential backoff\n" +
			"and jitter. An expired or revoked certificate cannot renew itself: the agent\n" +
			"then exits 1, and the service needs a new certificate from the CA's operator.\n" +
			"Without --once it sleeps until the next renewal is due; SIGHUP re-reads the\n" +
			"files, SIGTERM stops it. With --token-file and no --cert file yet, it first\n" +
			"makes a key here and trades the one-time token ('minica token') and a CSR for\n" +
			"the first certificate (POST /bootstrap). See docs/agent.md.\n\n" +
			"Example:\n   minica agent --url https://pki.example.com:8443 --ca /etc/app/ca.pem \\\n" +
			"     --cert /etc/app/app.crt --key /etc/app/app.key --exec 'systemctl reload app'",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", Usage: "the HTTPS `URL` of 'minica serve' (https://HOST:PORT, required)"},
			&cli.StringFlag{Name: "ca", Usage: "the CA certificate `FILE` (PEM) that serve's certificate chains to (required)"},
			caFingerprintFlag(),
			&cli.StringFlag{Name: "cert", Usage: "the certificate `FILE` to keep fresh (PEM; a chain after it is kept; required)"},
			&cli.StringFlag{Name: "key", Usage: "its private key `FILE` (unencrypted PEM; required)"},
			&cli.StringFlag{Name: "chain", Usage: "write the CA chain to `FILE` after each renewal"},
			&cli.StringFlag{Name: "token-file", Usage: "get the first certificate with the one-time token in `FILE` ('minica token') when --cert does not exist yet"},
			&cli.StringFlag{Name: "exec", Usage: "run `COMMAND` after each renewal (no shell: quotes only)"},
			&cli.StringFlag{Name: "renew-at", Value: strconv.FormatFloat(agent.DefaultRenewAt, 'f', -1, 64), Usage: "renew once this `FRACTION` of the lifetime has passed (0 with --once: now)"},
			&cli.BoolFlag{Name: "once", Usage: "check once, renew if due, and exit (for cron)"},
			&cli.StringFlag{Name: "timeout", Value: ca.FormatDuration(agent.DefaultTimeout), Usage: "give up one renewal attempt after `DURATION`"},
		},
		Action: func(c *cli.Context) error { return runAgent(c, e) },
	}
}

func runAgent(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	cfg, err := agentConfig(c, e)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, os.Interrupt)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reload := make(chan struct{}, 1)
	cfg.Reload = reload
	go func() {
		for range hup {
			select {
			case reload <- struct{}{}:
			default:
			}
		}
	}()
	a, err := agent.New(*cfg)
	if err != nil {
		return usagef(c, "%v", err)
	}
	err = a.Run(ctx)
	var expired *agent.ExpiredError
	var ref *agent.Refusal
	switch {
	case errors.As(err, &expired):
		return withHint(err, "ask the CA's operator for a new certificate ('minica issue'), install it, and start the agent again")
	case errors.As(err, &ref) && ref.Reason == agent.ReasonRevoked:
		return withHint(fmt.Errorf("the certificate %q is revoked: %w", cfg.CertFile, err),
			"a revoked certificate cannot renew itself: ask the CA's operator for a new one")
	case errors.As(err, &ref) && ref.Reason == agent.ReasonExpired:
		return withHint(fmt.Errorf("the certificate %q expired: %w", cfg.CertFile, err),
			"ask the CA's operator for a new certificate ('minica issue')")
	case errors.As(err, &ref) && ref.Bootstrap:
		return withHint(err, "a bootstrap token is good once, for its names, until it expires: ask the CA's operator for a new one ('minica token NAME ...') and write it to --token-file")
	case errors.As(err, &ref):
		return withHint(err, "serve will refuse this certificate every time; see docs/agent.md for the reasons")
	case err != nil:
		return err
	}
	if ctx.Err() != nil {
		fmt.Fprintln(e.stderr, "minica agent: stopped")
	}
	return nil
}

// agentConfig reads the flags into an agent.Config.
func agentConfig(c *cli.Context, e *env) (*agent.Config, error) {
	for _, f := range []string{"url", "ca", "cert", "key"} {
		if c.String(f) == "" {
			return nil, usagef(c, "--%s is required", f)
		}
	}
	renewAt, err := strconv.ParseFloat(c.String("renew-at"), 64)
	if err != nil || renewAt < 0 || renewAt >= 1 {
		return nil, usagef(c, "--renew-at %q is not a fraction from 0 to below 1", c.String("renew-at"))
	}
	if renewAt == 0 && !c.Bool("once") {
		return nil, withHint(usagef(c, "--renew-at 0 renews at every check: it is for --once"),
			"run 'minica agent --once --renew-at 0 ...' to renew now, then the agent with the default --renew-at")
	}
	timeout, err := ca.ParseDuration(c.String("timeout"))
	if err != nil || timeout <= 0 {
		return nil, usagef(c, "--timeout %q is not a positive duration", c.String("timeout"))
	}
	cfg := &agent.Config{URL: c.String("url"), CertFile: c.String("cert"), KeyFile: c.String("key"), ChainFile: c.String("chain"),
		TokenFile: c.String("token-file"), RenewAt: renewAt, Once: c.Bool("once"), Timeout: timeout, Log: e.stderr, Now: e.now, NewTimer: e.newTimer}
	if cmd := c.String("exec"); c.IsSet("exec") {
		if cfg.Exec, err = agent.SplitCommand(cmd); err != nil {
			return nil, usagef(c, "--exec %q: %v", cmd, err)
		}
	}
	pin, err := parseCAPin(c)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(c.String("ca"))
	if err != nil {
		return nil, fmt.Errorf("reading --ca: %w", err)
	}
	certs, err := formats.ParseCertificates(data)
	if err != nil || len(certs) == 0 {
		return nil, fmt.Errorf("reading --ca %q: no certificate in it", c.String("ca"))
	}
	if pin != nil {
		if err := ca.CheckPinned(certs, pin); err != nil {
			return nil, fmt.Errorf("reading --ca %q: %w", c.String("ca"), err)
		}
	}
	cfg.Roots = x509.NewCertPool()
	for _, cert := range certs {
		cfg.Roots.AddCert(cert)
	}
	return cfg, nil
}
