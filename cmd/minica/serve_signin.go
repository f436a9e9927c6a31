package main

import (
	"crypto"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/serve"
	"minica/serve/signin"
)

// defaultSigninCertValidity is the lifetime of a device certificate got
// by signing in: short, since a person renews from the page, and since a
// compromised identity provider can mint people (docs/sign-in.md).
const defaultSigninCertValidity = 90 * 24 * time.Hour

// serveSigninFlags are serve's flags for sign-in with an OpenID provider.
func serveSigninFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "oidc-issuer", Usage: "let people sign in with the OpenID provider at `URL` (its issuer, exactly) and get their own certificates (needs --enroll; see docs/sign-in.md)"},
		&cli.StringFlag{Name: "oidc-client-id", Usage: "the client `ID` registered at the provider"},
		&cli.StringFlag{Name: "oidc-client-secret-file", Usage: "read the client secret from `FILE` (readable by its owner only)"},
		&cli.StringFlag{Name: "oidc-redirect-url", Usage: "the callback `URL` registered at the provider: https://HOST[:PORT]/signin/callback, the public address of --listen-tls"},
		&cli.StringFlag{Name: "oidc-provider-name", Usage: "show `TEXT` on the start page: Sign in with TEXT (default: your company account)"},
		&cli.StringSliceFlag{Name: "oidc-scope", Usage: "also ask for `SCOPE` besides openid, email and profile (such as groups); repeatable"},
		&cli.StringSliceFlag{Name: "oidc-allow-domain", Usage: "let people of the email `DOMAIN` sign in (exactly that domain); repeatable, required unless --oidc-allow-any-domain"},
		&cli.BoolFlag{Name: "oidc-allow-any-domain", Usage: "let people of any email domain the provider vouches for sign in"},
		&cli.StringFlag{Name: "oidc-verified-claim", Value: "email_verified", Usage: "the boolean `CLAIM` that says the provider verified the email (a missing one is false)"},
		&cli.StringFlag{Name: "oidc-name-claim", Value: "name", Usage: "the `CLAIM` whose text is the certificate's common name (without it: the email)"},
		&cli.StringFlag{Name: "oidc-groups-claim", Usage: "the `CLAIM` that lists a person's groups, for --oidc-allow-group, --oidc-deny-group and --oidc-groups-ou"},
		&cli.StringSliceFlag{Name: "oidc-allow-group", Usage: "let only members of `GROUP` (any of these) sign in; repeatable"},
		&cli.StringSliceFlag{Name: "oidc-deny-group", Usage: "refuse members of `GROUP`; repeatable"},
		&cli.BoolFlag{Name: "oidc-groups-ou", Usage: "put the allowing groups of a person in their certificate's OU"},
		&cli.StringFlag{Name: "oidc-contact", Usage: "tell a refused person whom to ask: `TEXT` such as \"the IT desk, it@example.com\""},
		&cli.IntFlag{Name: "oidc-max-devices", Value: ca.DefaultMaxDevices, Usage: "let a person hold at most `N` valid device certificates"},
		&cli.StringFlag{Name: "oidc-cert-validity", Value: ca.FormatDuration(defaultSigninCertValidity), Usage: "issue device certificates valid for `DURATION`"},
		&cli.StringFlag{Name: "oidc-session", Value: ca.FormatDuration(signin.DefaultSessionLifetime), Usage: "end a person's session `DURATION` after they signed in"},
		&cli.StringFlag{Name: "oidc-timeout", Value: ca.FormatDuration(signin.DefaultProviderTimeout), Usage: "give up on a call to the provider after `DURATION` (connect and answer)"},
	}
}

// signinFlagsFree are the sign-in flags besides --oidc-issuer.
var signinFlagsFree = []string{"oidc-client-id", "oidc-client-secret-file", "oidc-redirect-url", "oidc-provider-name", "oidc-scope",
	"oidc-allow-domain", "oidc-allow-any-domain", "oidc-verified-claim", "oidc-name-claim", "oidc-groups-claim", "oidc-allow-group",
	"oidc-deny-group", "oidc-groups-ou", "oidc-contact", "oidc-max-devices", "oidc-cert-validity", "oidc-session", "oidc-timeout"}

// signinConfig checks the sign-in flags and returns the handler's
// configuration but for the CA, its key, the log and the clock; nil
// without --oidc-issuer.
func signinConfig(c *cli.Context) (*signin.Config, error) {
	if c.String("oidc-issuer") == "" {
		for _, f := range signinFlagsFree {
			if c.IsSet(f) {
				return nil, usagef(c, "--%s goes with --oidc-issuer", f)
			}
		}
		return nil, nil
	}
	switch {
	case !c.Bool("enroll"):
		return nil, usagef(c, "--oidc-issuer needs --enroll: a person's device gets its certificate through an enrollment link")
	case c.String("oidc-client-id") == "" || c.String("oidc-client-secret-file") == "" || c.String("oidc-redirect-url") == "":
		return nil, usagef(c, "--oidc-issuer needs --oidc-client-id, --oidc-client-secret-file and --oidc-redirect-url")
	case len(c.StringSlice("oidc-allow-domain")) == 0 && !c.Bool("oidc-allow-any-domain"):
		return nil, usagef(c, "--oidc-issuer needs --oidc-allow-domain DOMAIN (repeatable), or --oidc-allow-any-domain to let in everyone the provider vouches for")
	case c.Int("oidc-max-devices") <= 0:
		return nil, usagef(c, "--oidc-max-devices must be positive, got %d", c.Int("oidc-max-devices"))
	}
	cfg := &signin.Config{
		Issuer: c.String("oidc-issuer"), ClientID: c.String("oidc-client-id"), RedirectURL: c.String("oidc-redirect-url"),
		ProviderName: c.String("oidc-provider-name"), Scopes: c.StringSlice("oidc-scope"), Contact: c.String("oidc-contact"),
		MaxDevices: c.Int("oidc-max-devices"), AllowHTTP: c.Bool("enroll-http"),
		Mapping: signin.Mapping{
			AllowDomains: c.StringSlice("oidc-allow-domain"), AllowAnyDomain: c.Bool("oidc-allow-any-domain"),
			VerifiedClaim: c.String("oidc-verified-claim"), NameClaim: c.String("oidc-name-claim"), GroupsClaim: c.String("oidc-groups-claim"),
			AllowGroups: c.StringSlice("oidc-allow-group"), DenyGroups: c.StringSlice("oidc-deny-group"), GroupsToOU: c.Bool("oidc-groups-ou"),
		},
	}
	for _, d := range []struct {
		flag string
		dst  *time.Duration
	}{{"oidc-cert-validity", &cfg.CertValidity}, {"oidc-session", &cfg.SessionLifetime}, {"oidc-timeout", &cfg.ProviderTimeout}} {
		v, err := ca.ParseDuration(c.String(d.flag))
		if err != nil || v <= 0 {
			return nil, usagef(c, "--%s %q: want a positive duration such as 90d or 15m", d.flag, c.String(d.flag))
		}
		*d.dst = v
	}
	if err := cfg.Mapping.Check(); err != nil {
		return nil, usagef(c, "--oidc-*: %v", err)
	}
	secret, err := readClientSecret(c.String("oidc-client-secret-file"))
	if err != nil {
		return nil, err
	}
	cfg.ClientSecret = secret
	return cfg, nil
}

// readClientSecret reads the client secret from file, which no one but
// its owner may read: the secret lets anyone act as this serve at the
// provider.
func readClientSecret(file string) (string, error) {
	info, err := os.Stat(file)
	if err != nil {
		return "", fmt.Errorf("reading --oidc-client-secret-file: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return "", withHint(fmt.Errorf("--oidc-client-secret-file %q has mode %04o: others may read the client secret", file, info.Mode().Perm()),
			"chmod 600 %s", file)
	}
	data, err := readSecretFile(file, "client secret")
	if err != nil {
		return "", err
	}
	return string(data), nil
}

// addServeSignin gives cfg the sign-in handler of serve --oidc-issuer, on
// a CA handle of its own, and adds its metrics; without the flag it does
// nothing. The function it returns releases the handle.
func addServeSignin(c *cli.Context, e *env, scfg *signin.Config, cfg *serve.Config, signer crypto.Signer) (func(), error) {
	if scfg == nil {
		return func() {}, nil
	}
	authority, err := openCA(c, e)
	if err != nil {
		return nil, err
	}
	scfg.CA, scfg.Signer, scfg.Log, scfg.Now, scfg.LockTimeout = authority, signer, e.stderr, e.now, c.Duration("lock-timeout")
	h, err := signin.New(*scfg)
	if err != nil {
		authority.Close()
		return nil, usagef(c, "--oidc-*: %v", err)
	}
	cfg.Signin = h
	addMetrics(cfg, h.WriteMetrics)
	return func() { authority.Close() }, nil
}

// addMetrics appends write to what cfg's /metrics writes.
func addMetrics(cfg *serve.Config, write func(io.Writer)) {
	if extra := cfg.ExtraMetrics; extra != nil {
		cfg.ExtraMetrics = func(w io.Writer) { extra(w); write(w) }
	} else {
		cfg.ExtraMetrics = write
	}
}
