package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

func crlDeltaCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "delta",
		Usage:     "show or set when revocations sign delta CRLs",
		ArgsUsage: " ",
		Description: "Once the complete CRL lists --from certificates, a revocation signs a delta CRL\n" +
			"(RFC 5280 5.2.4: what changed since the last complete CRL, its base) instead of\n" +
			"the whole list; replicas following minica serve download only the delta. A\n" +
			"revocation signs a complete CRL again when the delta would pass --max-entries or\n" +
			"the base is older than --full-every, and so do 'minica crl' and serve's timer.\n" +
			"Readers of crl.pem alone (nginx, Apache, HAProxy) see revocations when a\n" +
			"complete CRL is signed. See docs/crl.md.\n\n" +
			"Example:\n   minica crl delta\n   minica crl delta --from 100000 --full-every 30m --url http://pki.example.com:8080/crl-delta.der\n   minica crl delta --off",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "from", Usage: fmt.Sprintf("sign deltas once the complete CRL lists `N` certificates (default %d; -1: always)", ca.DefaultDeltaFrom)},
			&cli.IntFlag{Name: "max-entries", Usage: fmt.Sprintf("most entries of a delta CRL before a complete CRL is signed (default %d)", ca.DefaultDeltaMaxEntries)},
			&cli.StringFlag{Name: "full-every", Usage: "longest time between complete CRLs while deltas are signed (default " + ca.FormatDuration(ca.DefaultFullEvery) + ")"},
			&cli.StringFlag{Name: "url", Usage: "the delta CRL's `URL`, carried by complete CRLs as their freshest CRL (OpenSSL needs it to use deltas)"},
			&cli.BoolFlag{Name: "off", Usage: "never sign delta CRLs: every revocation signs a complete CRL"},
			&cli.BoolFlag{Name: "on", Usage: "sign delta CRLs again, with the settings given or kept"},
		},
		Action: func(c *cli.Context) error { return runCRLDelta(c, e) },
	}
}

func runCRLDelta(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	if c.Bool("on") && c.Bool("off") {
		return usagef(c, "pass --on or --off, not both")
	}
	if c.NumFlags() == 0 {
		authority, err := openCA(c, e)
		if err != nil {
			return err
		}
		defer authority.Close()
		printDeltaSettings(e, authority.Settings.DeltaCRL)
		return nil
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	d := authority.Settings.DeltaCRL
	if c.IsSet("from") {
		d.From = c.Int("from")
	}
	if c.IsSet("max-entries") {
		d.MaxEntries = c.Int("max-entries")
	}
	if c.IsSet("full-every") {
		v, err := ca.ParseDuration(c.String("full-every"))
		if err != nil || v <= 0 {
			return usagef(c, "--full-every: want a positive duration such as 1h or 30m, not %q", c.String("full-every"))
		}
		d.FullEvery = ca.Duration(v)
	}
	if c.IsSet("url") {
		d.URL = c.String("url")
	}
	d.Off = c.Bool("off") || d.Off && !c.Bool("on")
	if err := authority.SetDeltaSettings(d); err != nil {
		return usagef(c, "%v", err)
	}
	printDeltaSettings(e, d)
	return nil
}

func printDeltaSettings(e *env, d ca.DeltaSettings) {
	if d.Off {
		fmt.Fprintln(e.stdout, "delta CRLs: off (every revocation signs a complete CRL)")
		return
	}
	fmt.Fprintf(e.stdout, "delta CRLs: from %d entries, at most %d changes each, a complete CRL at least every %s\n",
		d.FromEntries(), d.MaxDeltaEntries(), ca.FormatDuration(d.FullInterval()))
	if d.URL != "" {
		fmt.Fprintf(e.stdout, "freshest CRL URL: %s\n", d.URL)
	}
}
