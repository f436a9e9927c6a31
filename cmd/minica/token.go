package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

func tokenCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "token",
		Usage:     "make a one-time bootstrap token through which a machine gets its first certificate",
		ArgsUsage: "[NAME]",
		Description: "Creates a pending bootstrap token for NAME, bound to the names given (a server\n" +
			"certificate by default, as 'minica issue server' makes it: without --dns or --ip,\n" +
			"NAME is its DNS name; --client for a client certificate), and prints it once: on a\n" +
			"terminal only, or with --json for a script. It is good for one certificate, with\n" +
			"those names only, until --expires (default 1h, at most 30d). The machine makes its\n" +
			"key and trades the token and a CSR at serve's POST /bootstrap, or with 'minica agent\n" +
			"--token-file FILE', which then renews the certificate. Only hashes of the token are\n" +
			"stored: it cannot be shown again. See docs/agent.md.\n\n" +
			"Example:\n   minica token web2 --dns web2.svc.example.com\n" +
			"   (umask 077; minica token web3 --dns web3.svc.example.com --json | jq -r .token > web3.token)\n" +
			"   minica token billing --client --uri spiffe://example.com/billing\n" +
			"   minica token --list\n   minica token --cancel web2",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "dns", Usage: "DNS name SAN (repeatable; a server's default: NAME)"}, ipFlag(),
			emailFlag(), uriFlag(), cnFlag(), orgFlag(), ouFlag(),
			&cli.BoolFlag{Name: "server", Usage: "for a server certificate (EKU serverAuth; the default)"},
			&cli.BoolFlag{Name: "client", Usage: "for a client certificate (EKU clientAuth), as for service-to-service mTLS"},
			validityFlag("", "lifetime of the certificate such as 90d or 1y (default: the CA's server or client validity)"),
			noEmailInSubjectFlag(),
			nameForceFlag(),
			&cli.StringFlag{Name: "expires", Value: ca.FormatDuration(ca.DefaultTokenLifetime), Usage: "the token stops working after `DURATION` (at most 30d)"},
			&cli.BoolFlag{Name: "list", Usage: "list pending tokens: name, ID, profile, created, expires (--all: every token and what became of it)"},
			&cli.BoolFlag{Name: "all", Usage: "with --list, also used, cancelled, failed and expired tokens"},
			&cli.StringFlag{Name: "cancel", Usage: "cancel the pending token of `NAME` or ID"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error { return runToken(c, e) },
	}
}

// tokenIdentityFlags are the flags that describe the certificate, for
// NAME only.
var tokenIdentityFlags = []string{"dns", "ip", "email", "uri", "cn", "org", "ou", "server", "client", "validity", "no-email-in-subject", "force", "expires"}

func runToken(c *cli.Context, e *env) error {
	mode, err := chooseMode(c, ca.KindToken, []string{"list", "cancel"}, tokenIdentityFlags)
	if err != nil {
		return err
	}
	switch mode {
	case "--list":
		return listTokens(c, e)
	case "--cancel":
		return cancelToken(c, e)
	}
	return createToken(c, e)
}

// tokenJSON is one bootstrap token in --json output; Token only when
// created.
type tokenJSON struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Profile   ca.Profile `json:"profile"`
	Status    string     `json:"status"`
	Token     string     `json:"token,omitempty"`
	SANs      []string   `json:"sans"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	UsedAt    time.Time  `json:"used_at,omitzero"`
	UsedFrom  string     `json:"used_from,omitempty"`
	Serial    string     `json:"serial,omitempty"`
	Error     string     `json:"error,omitempty"`
}

func tokenToJSON(en *ca.Enrollment, now time.Time) tokenJSON {
	return tokenJSON{
		ID: en.ID, Name: en.Name, Profile: en.Profile(), Status: string(en.StatusAt(now)), SANs: nonNil(tokenSANs(en)),
		CreatedAt: en.CreatedAt, ExpiresAt: en.ExpiresAt, UsedAt: en.UsedAt, UsedFrom: en.UsedFrom, Serial: en.Serial, Error: en.Error,
	}
}

// tokenSANs lists the SANs the certificate of en will carry (none shown
// for an identity that no longer validates: the redemption says why).
func tokenSANs(en *ca.Enrollment) []string {
	sans, _ := en.SANs()
	return sans
}

// tokenIdentity reads the identity flags, checked as issue checks them for
// the profile that --client or --server asks for, and --expires.
func tokenIdentity(c *cli.Context, name string) (ca.EnrollIdentity, time.Duration, error) {
	p := ca.Server
	switch {
	case c.Bool("client") && c.Bool("server"):
		return ca.EnrollIdentity{}, 0, usagef(c, "--client and --server exclude each other")
	case c.Bool("client"):
		p = ca.Client
	case c.IsSet("no-email-in-subject"):
		return ca.EnrollIdentity{}, 0, usagef(c, "--no-email-in-subject goes with --client: a server certificate has no email in its subject")
	}
	id, err := leafIdentity(c, name, p)
	if err != nil {
		return id, 0, err
	}
	id.Profile = p
	lifetime, err := expiresValue(c)
	if err != nil {
		return id, 0, withHint(err, "a token need live only until the machine is provisioned: pass --expires %s or less (default %s)",
			ca.FormatDuration(ca.MaxEnrollmentLifetime), ca.FormatDuration(ca.DefaultTokenLifetime))
	}
	return id, lifetime, nil
}

func createToken(c *cli.Context, e *env) error {
	name := c.Args().First()
	id, lifetime, err := tokenIdentity(c, name)
	if err != nil {
		return err
	}
	if err := secretOnTerminal(c, e, ca.KindToken); err != nil {
		return err
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	if err := refuseRoot(authority); err != nil {
		return err
	}
	created, err := authority.CreateToken(name, id, lifetime)
	if err != nil {
		return pendingHint(name, err)
	}
	en := created.Enrollment
	if c.Bool("json") {
		j := tokenToJSON(en, e.now())
		j.Token = created.Token
		err = writeJSON(e.stdout, j)
	} else {
		printToken(e, en, created.Token, authority.Settings.EnrollURL)
	}
	warnUnresolvableThen(e.stderr, &ca.Record{Name: en.Name, Profile: en.Profile(), SANs: tokenSANs(en)}, func(dns string) string {
		return fmt.Sprintf("cancel the token (minica token --cancel %s) and make another with --dns %s (or --ip ADDRESS)", en.Name, dns)
	})
	if !c.Bool("json") {
		fmt.Fprintln(e.stderr, "minica: note: the token is shown only this once and works for whoever has it: carry it to the machine alone, in a file only its user can read (0600)")
	}
	return err
}

// printToken shows a new token on the terminal: what it is for, and the
// next step on the machine. base is serve's public HTTPS address when the
// CA knows it (the base of enrollment links), else "".
func printToken(e *env, en *ca.Enrollment, token, base string) {
	if base == "" {
		base = "https://HOST:PORT"
	}
	fmt.Fprintf(e.stdout, "bootstrap token for a %s certificate %q, one use\n", en.Profile(), en.Name)
	fmt.Fprintf(e.stdout, "  token      %s\n", token)
	fmt.Fprintf(e.stdout, "  id         %s\n", en.ID)
	fmt.Fprintf(e.stdout, "  sans       %s\n", sanText(tokenSANs(en)))
	fmt.Fprintf(e.stdout, "  expires    %s\n", day(en.ExpiresAt))
	fmt.Fprintf(e.stdout, "  next       put the token in a file (0600) on the machine, and run there:\n")
	fmt.Fprintf(e.stdout, "               minica agent --url %s --ca ca.pem --token-file FILE --cert %s.crt --key %s.key\n", base, en.Name, en.Name)
	fmt.Fprintf(e.stdout, "             or POST the token and a CSR made there to %s/bootstrap\n", base)
}

func listTokens(c *cli.Context, e *env) error {
	return listKind(c, e, ca.KindToken, func(en *ca.Enrollment, now time.Time) any { return tokenToJSON(en, now) })
}

func cancelToken(c *cli.Context, e *env) error {
	en, err := cancelKind(c, e, ca.KindToken)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return writeJSON(e.stdout, tokenToJSON(en, e.now()))
	}
	fmt.Fprintf(e.stdout, "cancelled bootstrap token %s for %q\n", en.ID, en.Name)
	return nil
}
