package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/serve/acme"
)

func acmeCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "acme",
		Usage: "manage who may get certificates from serve's ACME server, and when its clients renew",
		Description: "ACME clients (certbot, lego, cert-manager, Caddy) get certificates from 'minica serve'\n" +
			"with an external account binding (EAB): a key ID and an HMAC key that 'acme account\n" +
			"add' makes, each with a policy of the names its accounts may get.\n\n" +
			"Example:\n   minica acme account add web-fleet --dns-suffix svc.example.com\n" +
			"   minica acme account list\n   minica acme renew-now web1.svc.example.com",
		Subcommands: []*cli.Command{acmeAccountCommand(e), acmeRenewNowCommand(e)},
	}
}

func acmeAccountCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "account",
		Usage: "make, list and disable the external account bindings of ACME clients",
		Description: "A binding is a key ID and an HMAC key that an ACME client presents once, when it\n" +
			"creates its account, and the policy of that account's certificates.\n\n" +
			"Example:\n   minica acme account add web-fleet --dns-suffix svc.example.com\n" +
			"   minica acme account disable web-fleet",
		Subcommands: []*cli.Command{acmeAccountAddCommand(e), acmeAccountListCommand(e), acmeAccountDisableCommand(e)},
	}
}

func acmeAccountAddCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "add",
		Usage:     "make an external account binding (EAB key ID and HMAC key) for ACME clients",
		ArgsUsage: "NAME",
		Description: "Makes the binding NAME and prints its key ID and HMAC key once: on a terminal only,\n" +
			"or with --json for a script. The HMAC key is stored for the server, and never shown\n" +
			"again. Without --dns-suffix, --dns or --ip the binding's accounts may get any name\n" +
			"the CA's name constraints allow, but no wildcard; a wildcard *.B needs a --dns-suffix\n" +
			"that is B or above it. Every certificate is a server certificate (EKU serverAuth,\n" +
			"plus clientAuth with --client).\n\n" +
			"Example:\n   minica acme account add web-fleet --dns-suffix svc.example.com\n" +
			"   minica acme account add lab --ip 10.20.0.0/16 --dns lab.example.com --lifetime 2d\n" +
			"   minica acme account add mesh --dns-suffix mesh.example.com --client --accounts 3 --json",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "dns-suffix", Usage: "allow every DNS name under `SUFFIX`, such as svc.example.com (not SUFFIX itself; repeatable)"},
			&cli.StringSliceFlag{Name: "dns", Usage: "allow the DNS name `NAME` exactly (repeatable; *.example.com for that wildcard alone)"},
			&cli.StringSliceFlag{Name: "ip", Usage: "allow the IP addresses in `CIDR`, such as 10.20.0.0/16 (repeatable; a bare address allows itself)"},
			&cli.BoolFlag{Name: "client", Usage: "add clientAuth to the certificates' EKU, for service-to-service mTLS"},
			&cli.StringFlag{Name: "lifetime", Value: ca.FormatDuration(ca.DefaultACMELifetime), Usage: "each certificate lives `DURATION`, such as 7d or 36h (within the CA certificate's own life)"},
			&cli.IntFlag{Name: "orders-per-hour", Value: ca.DefaultACMEOrdersPerHour, Usage: "at most `N` new orders by the binding's accounts, together, in a clock hour"},
			&cli.IntFlag{Name: "pending-authz", Value: ca.DefaultACMEPendingAuthz, Usage: "at most `N` pending authorizations held by one of the binding's accounts"},
			&cli.IntFlag{Name: "accounts", Value: ca.DefaultACMEAccounts, Usage: "the key may create `N` ACME accounts (1: a one-time credential)"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error { return runACMEAccountAdd(c, e) },
	}
}

func acmeAccountListCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "list the external account bindings, without their HMAC keys",
		ArgsUsage: " ",
		Description: "One row per binding, by name: its key ID, what it allows (.SUFFIX for the names\n" +
			"under a suffix), the certificates' profile and lifetime, the accounts bound of\n" +
			"those allowed, and whether it is disabled; --json prints JSON Lines, with the\n" +
			"accounts' IDs.\n\n" +
			"Example:\n   minica acme account list --json",
		Flags:  []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON Lines, one binding a line"}},
		Action: func(c *cli.Context) error { return runACMEAccountList(c, e) },
	}
}

func acmeAccountDisableCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "disable",
		Usage:     "disable an external account binding: its key and its accounts get nothing more",
		ArgsUsage: "NAME",
		Description: "Its key binds no more accounts, and the accounts it bound place no more orders.\n" +
			"Their certificates stay valid: revoke them to end them. There is no undo: make a\n" +
			"new binding instead.\n\n" +
			"Example:\n   minica acme account disable web-fleet",
		Flags:  []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error { return runACMEAccountDisable(c, e) },
	}
}

func acmeRenewNowCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "renew-now",
		Usage:     "ask the ACME clients of a name's certificates (or of all) to renew them now",
		ArgsUsage: "NAME|--all",
		Description: "Moves the renewal window (RFC 9773 renewal information, ARI) of the valid ACME\n" +
			"certificates of NAME, or with --all of every one, into the past: clients that\n" +
			"check ARI (certbot 4.1+, lego, Caddy, cert-manager) renew on their next check.\n" +
			"Certificates issued from now on get the usual window. Clients without ARI renew on\n" +
			"their own schedule: revoke a certificate to make them notice.\n\n" +
			"Example:\n   minica acme renew-now web1.svc.example.com\n   minica acme renew-now --all",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "all", Usage: "every valid ACME certificate of the CA"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error { return runACMERenewNow(c, e) },
	}
}

// acmeBindingJSON is a binding in --json output; HMACKey only when made.
type acmeBindingJSON struct {
	Name          string    `json:"name"`
	KeyID         string    `json:"key_id"`
	HMACKey       string    `json:"hmac_key,omitempty"`
	DNSSuffixes   []string  `json:"dns_suffixes"`
	DNSNames      []string  `json:"dns_names"`
	IPRanges      []string  `json:"ip_ranges"`
	Profile       string    `json:"profile"`
	Lifetime      string    `json:"lifetime"`
	OrdersPerHour int       `json:"orders_per_hour"`
	PendingAuthz  int       `json:"pending_authz"`
	MaxAccounts   int       `json:"max_accounts"`
	Accounts      []string  `json:"accounts"`
	Disabled      bool      `json:"disabled"`
	Created       time.Time `json:"created"`
}

// acmeBindingToJSON is b as the JSON of acme account, with the IDs of the
// accounts it created (bound: ca.CA.ACMEBoundAccounts).
func acmeBindingToJSON(b *ca.ACMEBinding, bound map[string][]string) acmeBindingJSON {
	ranges := []string{}
	for _, r := range b.IPRanges {
		ranges = append(ranges, r.String())
	}
	return acmeBindingJSON{
		Name: b.Name, KeyID: b.KeyID, DNSSuffixes: nonNil(b.DNSSuffixes), DNSNames: nonNil(b.DNSNames), IPRanges: ranges,
		Profile: acmeProfile(b), Lifetime: ca.FormatDuration(b.Lifetime), OrdersPerHour: b.OrdersPerHour,
		PendingAuthz: b.PendingAuthz, MaxAccounts: b.MaxAccounts, Accounts: nonNil(slices.Concat(b.Accounts, bound[b.KeyID])), Disabled: b.Disabled, Created: b.Created,
	}
}

// acmeProfile names the profile of a binding's certificates.
func acmeProfile(b *ca.ACMEBinding) string {
	if b.Client {
		return "server+client"
	}
	return "server"
}

// acmeAllows lists what a binding allows: ".SUFFIX", exact names, ranges;
// "any" for a binding without entries.
func acmeAllows(b *ca.ACMEBinding) string {
	var out []string
	for _, s := range b.DNSSuffixes {
		out = append(out, "."+s)
	}
	out = append(out, b.DNSNames...)
	for _, r := range b.IPRanges {
		out = append(out, r.String())
	}
	if len(out) == 0 {
		return "any"
	}
	return strings.Join(out, ",")
}

// acmePolicyFlags reads the policy flags of acme account add, each value
// checked as the binding will take it, so that an error names its flag.
func acmePolicyFlags(c *cli.Context) (ca.ACMEPolicy, error) {
	var p ca.ACMEPolicy
	for _, s := range c.StringSlice("dns-suffix") {
		one := ca.ACMEPolicy{DNSSuffixes: []string{s}}
		if err := one.Normalize(); err != nil {
			return p, usagef(c, "--dns-suffix: %v", err)
		}
		p.DNSSuffixes = append(p.DNSSuffixes, one.DNSSuffixes...)
	}
	for _, s := range c.StringSlice("dns") {
		one := ca.ACMEPolicy{DNSNames: []string{s}}
		if err := one.Normalize(); err != nil {
			return p, usagef(c, "--dns: %v", err)
		}
		p.DNSNames = append(p.DNSNames, one.DNSNames...)
	}
	for _, s := range c.StringSlice("ip") {
		r, err := parseACMERange(s)
		if err != nil {
			return p, usagef(c, "--ip: %v", err)
		}
		p.IPRanges = append(p.IPRanges, r)
	}
	p.Client = c.Bool("client")
	lifetime, err := ca.ParseDuration(c.String("lifetime"))
	if err != nil {
		return p, usagef(c, "--lifetime: %v", err)
	}
	if lifetime < ca.MinValidity {
		return p, usagef(c, "--lifetime %s: want at least %s (a certificate is backdated %s for clock skew)", c.String("lifetime"), ca.FormatDuration(ca.MinValidity), ca.FormatDuration(ca.Backdate))
	}
	p.Lifetime = lifetime
	for _, f := range []struct {
		name string
		v    *int
	}{{"orders-per-hour", &p.OrdersPerHour}, {"pending-authz", &p.PendingAuthz}, {"accounts", &p.MaxAccounts}} {
		if *f.v = c.Int(f.name); *f.v < 1 {
			return p, usagef(c, "--%s %d: want 1 or more", f.name, *f.v)
		}
	}
	return p, nil
}

// parseACMERange parses an --ip value: a CIDR range without host bits,
// or a bare address (itself alone).
func parseACMERange(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	r, err := netip.ParsePrefix(s)
	if err != nil {
		return r, fmt.Errorf("%q is not an address range: want CIDR such as 10.20.0.0/16 or 2001:db8::/48, or a bare address", s)
	}
	if r.Masked() != r {
		return r, fmt.Errorf("%q has bits set past its /%d: did you mean %s?", s, r.Bits(), r.Masked())
	}
	return r, nil
}

// acmeSecretOnTerminal refuses to print a new binding's HMAC key on a
// stdout that is not a terminal unless --json asks for it, as token does.
func acmeSecretOnTerminal(c *cli.Context, e *env) error {
	if c.Bool("json") || (e.stdoutTerminal != nil && e.stdoutTerminal()) {
		return nil
	}
	return withHint(usagef(c, "the HMAC key is a secret, and stdout is not a terminal: it is printed only on a terminal, or as JSON"),
		"pass --json to hand the key to a script, or run minica acme account add on a terminal")
}

func runACMEAccountAdd(c *cli.Context, e *env) error {
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	name := c.Args().First()
	if err := ca.ValidateName(name); err != nil {
		return usagef(c, "NAME: %v", err)
	}
	p, err := acmePolicyFlags(c)
	if err != nil {
		return err
	}
	if err := acmeSecretOnTerminal(c, e); err != nil {
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
	b, err := authority.CreateACMEBinding(name, p)
	switch {
	case errors.Is(err, ca.ErrOutlivesCA):
		return withHint(fmt.Errorf("--lifetime: %w", err), "the CA certificate expires on %s: pass a shorter --lifetime", day(authority.Cert.NotAfter))
	case errors.Is(err, fs.ErrExist):
		return withHint(err, "choose another name; 'minica acme account list' shows the bindings")
	case err != nil:
		return err
	}
	hmacKey := base64.RawURLEncoding.EncodeToString(b.HMACKey)
	if c.Bool("json") {
		j := acmeBindingToJSON(b, nil)
		j.HMACKey = hmacKey
		return writeJSON(e.stdout, j)
	}
	base := authority.Settings.EnrollURL
	if base == "" {
		base = "https://HOST:PORT"
	}
	example := "HOST.example.com"
	switch {
	case len(b.DNSNames) > 0:
		example = b.DNSNames[0]
	case len(b.DNSSuffixes) > 0:
		example = "HOST." + b.DNSSuffixes[0]
	}
	fmt.Fprintf(e.stdout, "ACME external account binding %q\n", b.Name)
	fmt.Fprintf(e.stdout, "  key id     %s\n", b.KeyID)
	fmt.Fprintf(e.stdout, "  hmac key   %s\n", hmacKey)
	fmt.Fprintf(e.stdout, "  allows     %s\n", acmeAllowsText(b))
	fmt.Fprintf(e.stdout, "  profile    %s, %s\n", acmeProfile(b), ca.FormatDuration(b.Lifetime))
	fmt.Fprintf(e.stdout, "  accounts   %d\n", b.MaxAccounts)
	fmt.Fprintf(e.stdout, "  certbot    certbot certonly --server %s%s --eab-kid %s --eab-hmac-key %s -d %s\n", base, acme.DirectoryPath, b.KeyID, hmacKey, example)
	fmt.Fprintf(e.stdout, "  lego       lego --server %s%s --eab --kid %s --hmac %s -d %s run\n", base, acme.DirectoryPath, b.KeyID, hmacKey, example)
	fmt.Fprintln(e.stderr, "minica: note: the HMAC key is shown only this once and creates an account for whoever has it: hand it to the client's operator alone")
	return nil
}

// acmeAllowsText says what a binding allows, for a person.
func acmeAllowsText(b *ca.ACMEBinding) string {
	if len(b.DNSSuffixes)+len(b.DNSNames)+len(b.IPRanges) == 0 {
		return "any name the CA allows (no wildcard)"
	}
	var out []string
	for _, s := range b.DNSSuffixes {
		out = append(out, "names under "+s)
	}
	out = append(out, b.DNSNames...)
	for _, r := range b.IPRanges {
		out = append(out, r.String())
	}
	return strings.Join(out, ", ")
}

func runACMEAccountList(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	authority, err := openCA(c, e)
	if err != nil {
		return err
	}
	defer authority.Close()
	var list []*ca.ACMEBinding
	for b, err := range authority.ACMEBindings() {
		if err != nil {
			return err
		}
		list = append(list, b)
	}
	slices.SortFunc(list, func(a, b *ca.ACMEBinding) int { return strings.Compare(a.Name, b.Name) })
	if c.Bool("json") {
		bound, err := authority.ACMEBoundAccounts()
		if err != nil {
			return err
		}
		for _, b := range list {
			if err := writeJSON(e.stdout, acmeBindingToJSON(b, bound)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintln(e.stderr, "minica: no ACME account bindings; make one with minica acme account add NAME")
		return nil
	}
	fmt.Fprintf(e.stdout, "%-20s %-22s %-13s %-8s %-8s %-8s %s\n", "NAME", "KEY ID", "PROFILE", "LIFE", "ACCOUNTS", "STATUS", "ALLOWS")
	for _, b := range list {
		status := "active"
		if b.Disabled {
			status = "disabled"
		}
		fmt.Fprintf(e.stdout, "%-20s %-22s %-13s %-8s %-8s %-8s %s\n", b.Name, b.KeyID, acmeProfile(b), ca.FormatDuration(b.Lifetime),
			fmt.Sprintf("%d/%d", b.Bound(), b.MaxAccounts), status, acmeAllows(b))
	}
	return nil
}

func runACMEAccountDisable(c *cli.Context, e *env) error {
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	name := c.Args().First()
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	b, err := authority.ACMEBindingByName(name)
	if err != nil {
		return acmeUnknownHint(err)
	}
	was := b.Disabled
	if b, err = authority.DisableACMEBinding(name); err != nil {
		return acmeUnknownHint(err)
	}
	if c.Bool("json") {
		bound, err := authority.ACMEBoundAccounts()
		if err != nil {
			return err
		}
		return writeJSON(e.stdout, acmeBindingToJSON(b, bound))
	}
	if was {
		fmt.Fprintf(e.stdout, "ACME binding %q (key id %s) was already disabled\n", b.Name, b.KeyID)
		return nil
	}
	fmt.Fprintf(e.stdout, "disabled ACME binding %q (key id %s): its key binds no more accounts, and its %d account(s) order nothing more\n",
		b.Name, b.KeyID, b.Bound())
	return nil
}

// acmeUnknownHint adds where the bindings are listed to an unknown name.
func acmeUnknownHint(err error) error {
	if errors.Is(err, ca.ErrACMEBindingUnknown) {
		return withHint(err, "'minica acme account list' shows the bindings")
	}
	return err
}

func runACMERenewNow(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 1); err != nil {
		return err
	}
	all := c.Bool("all")
	switch {
	case all && c.NArg() == 1:
		return usagef(c, "NAME and --all exclude each other")
	case !all && c.NArg() == 0:
		return usagef(c, "renew-now needs a NAME, or --all")
	}
	name := c.Args().First()
	if !all {
		if err := ca.ValidateName(name); err != nil {
			return usagef(c, "NAME: %v", err)
		}
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	n, err := authority.ACMERenewNow(name, all, e.now())
	if errors.Is(err, ca.ErrNotFound) {
		return withHint(err, "'minica list' shows the names of the CA's certificates")
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return writeJSON(e.stdout, struct {
			Name  string `json:"name,omitempty"`
			All   bool   `json:"all,omitempty"`
			Moved int    `json:"moved"`
		}{name, all, n})
	}
	what := fmt.Sprintf("of %q", name)
	if all {
		what = "of the CA"
	}
	fmt.Fprintf(e.stdout, "%d valid ACME certificate(s) %s to renew now: clients that check renewal information (ARI) renew within minutes\n", n, what)
	if n == 0 && !all {
		fmt.Fprintf(e.stderr, "minica: note: %q has no valid certificate that an ACME client ordered; renew others with minica renew %s\n", name, name)
	}
	return nil
}
